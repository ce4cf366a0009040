package metadata

import (
	"errors"
	"reflect"
	"testing"

	"github.com/skein-log/skein/internal/authz"
)

func sampleACL(id, topic string, perm authz.Permission) AccessControlEntry {
	return AccessControlEntry{ID: id, ResourceType: authz.ResourceTopic, ResourceName: topic, PatternType: authz.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: authz.OpRead, PermissionType: perm}
}

func TestApplyACLs(t *testing.T) {
	im := Empty("c")
	im1, err := im.Apply(sampleACL("a", "t", authz.PermissionAllow), sampleACL("b", "u", authz.PermissionAllow))
	if err != nil {
		t.Fatal(err)
	}
	if im.ACLs().Len() != 0 {
		t.Fatal("Apply changed the base image's ACLs")
	}
	alice := authz.Principal{Type: "User", Name: "alice"}
	if !(authz.Authorizer{ACLs: im1.ACLs()}).Authorize(alice, "h", authz.OpRead, authz.ResourceTopic, "t") {
		t.Fatal("applied ACL does not allow")
	}
	im2, err := im1.Apply(RemoveAccessControlEntry{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if (authz.Authorizer{ACLs: im2.ACLs()}).Authorize(alice, "h", authz.OpRead, authz.ResourceTopic, "t") {
		t.Fatal("removed ACL still allows")
	}
	if im1.ACLs().Len() != 2 || im2.ACLs().Len() != 1 {
		t.Fatalf("lens %d %d", im1.ACLs().Len(), im2.ACLs().Len())
	}
	// An unrelated record keeps the set.
	im3, err := im2.Apply(AllocateProducerIDs{NextID: 10})
	if err != nil || im3.ACLs() != im2.ACLs() {
		t.Fatalf("unrelated record rebuilt the ACLs: %v", err)
	}
	for name, rec := range map[string]Record{
		"duplicate id":   sampleACL("b", "x", authz.PermissionAllow),
		"unknown remove": RemoveAccessControlEntry{ID: "zz"},
		"no id":          sampleACL("", "x", authz.PermissionAllow),
		"bad pattern":    AccessControlEntry{ID: "q", ResourceType: authz.ResourceTopic, ResourceName: "t", PatternType: authz.PatternMatch, Principal: "User:a", Host: "*", Operation: authz.OpRead, PermissionType: authz.PermissionAllow},
	} {
		if _, err := im2.Apply(rec); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestACLsSurviveSnapshot(t *testing.T) {
	im, err := Empty("c").Apply(sampleACL("a", "t", authz.PermissionAllow), sampleACL("b", "u", authz.PermissionDeny),
		sampleACL("c", "v", authz.PermissionAllow), RemoveAccessControlEntry{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeEntry(ImageRecords(im))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Empty("c").Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.ACLs().All(), im.ACLs().All()) || back.ACLs().Len() != 2 {
		t.Fatalf("snapshot lost ACLs:\n got %+v\nwant %+v", back.ACLs().All(), im.ACLs().All())
	}
}
