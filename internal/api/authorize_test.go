package api

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

// A forwarded request carries its client's principal in a tagged field,
// which only flexible versions encode: a forwardable API whose newest
// version were not flexible would reach the controller as the broker's.
func TestForwardableVersionsCarryThePrincipal(t *testing.T) {
	for _, spec := range Specs() {
		if !spec.Forwardable {
			continue
		}
		req := kmsg.RequestForKey(spec.Key)
		req.SetVersion(spec.MaxVersion)
		if !req.IsFlexible() {
			t.Errorf("%s v%d is forwarded but not flexible", kmsg.NameForKey(spec.Key), spec.MaxVersion)
		}
		if requestTags(req) == nil {
			t.Errorf("%s has no tagged fields", kmsg.NameForKey(spec.Key))
		}
	}
}

func TestForwardedPrincipalTrustedOnlyFromBrokers(t *testing.T) {
	alice := Principal{Type: "User", Name: "alice"}
	encodeDecode := func(r *Request) *Request {
		b := r.Body.AppendTo(nil)
		body := kmsg.NewPtrCreateACLsRequest()
		body.SetVersion(r.Body.GetVersion())
		if err := body.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		return &Request{Body: body}
	}
	client := &Request{Principal: alice, Host: "10.1.1.1", Body: func() kmsg.Request {
		r := kmsg.NewPtrCreateACLsRequest()
		r.SetVersion(3)
		return r
	}()}
	tagForwardedPrincipal(client, 2)

	atController := encodeDecode(client)
	atController.Principal = BrokerPrincipal
	if !takeForwardedPrincipal(atController) {
		t.Fatal("a broker's forwarded request not seen as forwarded")
	}
	if atController.Principal != alice || atController.Host != "10.1.1.1" {
		t.Fatalf("controller saw %v from %s", atController.Principal, atController.Host)
	}
	if n := requestTags(atController.Body).Len(); n != 0 {
		t.Fatalf("tag left on the request: %d", n)
	}

	forged := encodeDecode(client)
	forged.Principal = authz.Anonymous
	if takeForwardedPrincipal(forged) || forged.Principal != authz.Anonymous {
		t.Fatalf("a client's tag was trusted: %v", forged.Principal)
	}

	// A broker's own request (no client principal) is marked forwarded
	// too, and keeps the broker's rights.
	own := &Request{Body: kmsg.NewPtrCreateACLsRequest()}
	own.Body.SetVersion(3)
	tagForwardedPrincipal(own, 2)
	atController = encodeDecode(own)
	atController.Principal = BrokerPrincipal
	if !takeForwardedPrincipal(atController) || atController.Principal != BrokerPrincipal {
		t.Fatalf("a broker's own forwarded request: principal %v", atController.Principal)
	}
}

// Every controller-only API answers a refusal at its top: the generic
// CLUSTER_ACTION check in Serve depends on it.
func TestControllerOnlyResponsesHaveTopLevelError(t *testing.T) {
	for _, spec := range Specs() {
		if !spec.ControllerOnly {
			continue
		}
		resp := kmsg.RequestForKey(spec.Key).ResponseKind()
		setTopLevelError(resp, 31)
		f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
		if !f.IsValid() || f.Int() != 31 {
			t.Errorf("%s has no top-level ErrorCode", kmsg.NameForKey(spec.Key))
		}
	}
}
