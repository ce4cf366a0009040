package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

func testACL(id, topic string, op authz.Operation) authz.ACL {
	return authz.ACL{ID: id, ResourceType: authz.ResourceTopic, ResourceName: topic, PatternType: authz.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: op, Permission: authz.PermissionAllow}
}

func TestCreateAndDeleteACLs(t *testing.T) {
	im := metadata.Empty("c")
	bad := testACL("x", "t", authz.OpAny)
	recs, errs := CreateACLs(im, []authz.ACL{testACL("a", "t", authz.OpRead), bad, testACL("b", "t", authz.OpRead), testACL("c", "u", authz.OpWrite)})
	if errs[0] != nil || !errors.Is(errs[1], kerr.InvalidRequest) || errs[2] != nil || errs[3] != nil {
		t.Fatalf("errs %v", errs)
	}
	if len(recs) != 2 {
		t.Fatalf("want 2 records (the duplicate in the request is stored once), got %v", recs)
	}
	im, err := im.Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	// Creating an existing binding again is a success without a record.
	recs, errs = CreateACLs(im, []authz.ACL{testACL("d", "t", authz.OpRead)})
	if len(recs) != 0 || errs[0] != nil {
		t.Fatalf("existing binding: %v %v", recs, errs)
	}
	all := authz.Filter{ResourceType: authz.ResourceAny, PatternType: authz.PatternAny, Operation: authz.OpAny, Permission: authz.PermissionAny}
	onlyT := all
	name := "t"
	onlyT.ResourceName = &name
	invalid := all
	invalid.Operation = authz.OpUnknown
	recs, matched, errs := DeleteACLs(im, []authz.Filter{onlyT, all, invalid})
	if len(matched[0]) != 1 || len(matched[1]) != 2 || !errors.Is(errs[2], kerr.InvalidRequest) {
		t.Fatalf("matched %v errs %v", matched, errs)
	}
	if len(recs) != 2 {
		t.Fatalf("an ACL matched by two filters must be removed once: %v", recs)
	}
	im, err = im.Apply(recs...)
	if err != nil || im.ACLs().Len() != 0 {
		t.Fatalf("after delete: %v, %d left", err, im.ACLs().Len())
	}
}
