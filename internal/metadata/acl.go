package metadata

import (
	"fmt"

	"github.com/skein-log/skein/internal/authz"
)

// AccessControlEntry adds one ACL: Kafka's AccessControlEntryRecord. The
// controller picks a fresh ID per entry; an ID already present is refused,
// so replaying the log cannot duplicate an entry.
type AccessControlEntry struct {
	ID             string
	ResourceType   authz.ResourceType
	ResourceName   string
	PatternType    authz.PatternType
	Principal      string
	Host           string
	Operation      authz.Operation
	PermissionType authz.Permission
}

// RemoveAccessControlEntry deletes one ACL by ID: Kafka's
// RemoveAccessControlEntryRecord.
type RemoveAccessControlEntry struct {
	ID string
}

func (AccessControlEntry) isRecord()       {}
func (RemoveAccessControlEntry) isRecord() {}

// ACL converts the record to the authorizer's form.
func (r AccessControlEntry) ACL() authz.ACL {
	return authz.ACL{
		ID: r.ID, ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType,
	}
}

// ACLRecord is the record that adds a.
func ACLRecord(a authz.ACL) AccessControlEntry {
	return AccessControlEntry{
		ID: a.ID, ResourceType: a.ResourceType, ResourceName: a.ResourceName, PatternType: a.PatternType,
		Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission,
	}
}

// ACLs is the cluster's ACL set; never nil.
func (im *Image) ACLs() *authz.Set {
	if im.acls == nil {
		return authz.NewSet(nil)
	}
	return im.acls
}

// writableACLs starts the builder's private copy of the ACLs.
func (b *builder) writableACLs() {
	if b.acls != nil {
		return
	}
	b.acls = map[string]authz.ACL{}
	for _, a := range b.img.ACLs().All() {
		b.acls[a.ID] = a
	}
}

func (b *builder) addACL(r AccessControlEntry) error {
	if r.ID == "" {
		return fmt.Errorf("acl without an id")
	}
	a := r.ACL()
	if err := a.Validate(); err != nil {
		return fmt.Errorf("acl %s: %w", r.ID, err)
	}
	b.writableACLs()
	if _, dup := b.acls[r.ID]; dup {
		return fmt.Errorf("acl id %s already exists", r.ID)
	}
	b.acls[r.ID] = a
	return nil
}

func (b *builder) removeACL(r RemoveAccessControlEntry) error {
	b.writableACLs()
	if _, ok := b.acls[r.ID]; !ok {
		return fmt.Errorf("remove: unknown acl id %s", r.ID)
	}
	delete(b.acls, r.ID)
	return nil
}

// finishACLs indexes the builder's ACLs into the new image's set.
func (b *builder) finishACLs(img *Image) {
	if b.acls == nil {
		return
	}
	list := make([]authz.ACL, 0, len(b.acls))
	for _, a := range b.acls {
		list = append(list, a)
	}
	img.acls = authz.NewSet(list)
}

// aclImageRecords are the records that rebuild the image's ACLs.
func aclImageRecords(im *Image) []Record {
	var recs []Record
	for _, a := range im.ACLs().All() {
		recs = append(recs, ACLRecord(a))
	}
	return recs
}
