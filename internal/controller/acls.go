package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/metadata"
)

// CreateACLs decides a CreateAcls request: one record per new binding.
// acls carry fresh ids. An invalid binding fails alone with
// INVALID_REQUEST; a binding equal to one already stored (or to an earlier
// one of the request) succeeds without a second copy, as in Kafka.
func CreateACLs(im *metadata.Image, acls []authz.ACL) ([]metadata.Record, []error) {
	var recs []metadata.Record
	errs := make([]error, len(acls))
	existing := im.ACLs()
	var added []authz.ACL
	for i, a := range acls {
		if err := a.Validate(); err != nil {
			errs[i] = errorf(kerr.InvalidRequest, "%v", err)
			continue
		}
		if _, dup := existing.FindSame(a); dup {
			continue
		}
		if a.ID == "" {
			errs[i] = errorf(kerr.UnknownServerError, "acl without an id")
			continue
		}
		if _, taken := existing.ByID(a.ID); taken {
			errs[i] = errorf(kerr.UnknownServerError, "acl id %s already in use; retry", a.ID)
			continue
		}
		if _, dup := authz.NewSet(added).FindSame(a); dup {
			continue
		}
		added = append(added, a)
		recs = append(recs, metadata.ACLRecord(a))
	}
	return recs, errs
}

// DeleteACLs decides a DeleteAcls request: every ACL matching any filter
// is removed once; matched[i] lists what filter i matched. An invalid
// filter fails alone with INVALID_REQUEST.
func DeleteACLs(im *metadata.Image, filters []authz.Filter) (recs []metadata.Record, matched [][]authz.ACL, errs []error) {
	matched = make([][]authz.ACL, len(filters))
	errs = make([]error, len(filters))
	removed := map[string]bool{}
	set := im.ACLs()
	for i, f := range filters {
		if err := f.Validate(); err != nil {
			errs[i] = errorf(kerr.InvalidRequest, "%v", err)
			continue
		}
		for _, a := range set.Select(f) {
			matched[i] = append(matched[i], a)
			if !removed[a.ID] {
				removed[a.ID] = true
				recs = append(recs, metadata.RemoveAccessControlEntry{ID: a.ID})
			}
		}
	}
	return recs, matched, errs
}
