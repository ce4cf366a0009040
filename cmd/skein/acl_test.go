package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestACLCommands(t *testing.T) {
	// ANONYMOUS is the super user that administers; ACLs decide for the
	// wildcard principal User:*, which also matches it in list filters.
	addr := startTestBroker(t,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS")
	out := mustRun(t, runACL, "", "create", "--bootstrap-server", addr, "--allow-principal", "User:alice",
		"--operation", "Read", "--operation", "Describe", "--topic", "orders", "--group", "billing")
	if strings.Count(out, "Created") != 4 {
		t.Fatalf("create printed:\n%s", out)
	}
	mustRun(t, runACL, "", "create", "--bootstrap-server", addr, "--deny-principal", "User:bob", "--deny-host", "10.0.0.9",
		"--operation", "Write", "--topic", "orders-", "--resource-pattern-type", "prefixed")

	out = mustRun(t, runACL, "", "list", "--bootstrap-server", addr)
	for _, want := range []string{
		"resourceType=TOPIC, name=orders, patternType=LITERAL",
		"resourceType=GROUP, name=billing, patternType=LITERAL",
		"(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
		"resourceType=TOPIC, name=orders-, patternType=PREFIXED",
		"(principal=User:bob, host=10.0.0.9, operation=WRITE, permissionType=DENY)",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	// MATCH lists what applies to a topic: its literal ACLs and prefixes.
	out = mustRun(t, runACL, "", "list", "--bootstrap-server", addr, "--topic", "orders-eu", "--resource-pattern-type", "match")
	if !strings.Contains(out, "name=orders-,") || strings.Contains(out, "name=orders,") {
		t.Fatalf("match list:\n%s", out)
	}

	out = mustRun(t, runACL, "", "delete", "--bootstrap-server", addr, "--topic", "orders", "--operation", "Read")
	if strings.Count(out, "Deleted") != 1 {
		t.Fatalf("delete printed:\n%s", out)
	}
	out = mustRun(t, runACL, "", "list", "--bootstrap-server", addr, "--topic", "orders")
	if strings.Contains(out, "READ") || !strings.Contains(out, "DESCRIBE") {
		t.Fatalf("after delete:\n%s", out)
	}

	if r := runCLI(t, runACL, "", "create", "--bootstrap-server", addr, "--allow-principal", "alice", "--topic", "x"); r.err == nil ||
		!strings.Contains(r.err.Error(), "INVALID_REQUEST") {
		t.Fatalf("a principal without a type: %v", r.err)
	}
	if r := runCLI(t, runACL, "", "create", "--bootstrap-server", addr, "--topic", "x"); r.err == nil {
		t.Fatal("create without a principal succeeded")
	}
}

// Without an authorizer the ACL APIs answer SECURITY_DISABLED, as Kafka's.
func TestACLCommandsWithoutAuthorizer(t *testing.T) {
	addr := startTestBroker(t)
	r := runCLI(t, runACL, "", "list", "--bootstrap-server", addr)
	if r.err == nil || !errors.Is(r.err, kerr.SecurityDisabled) {
		t.Fatalf("list without an authorizer: %v", r.err)
	}
	mustRun(t, runTopic, "", "create", "--bootstrap-server", addr, "free")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "free", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("without an authorizer everything is allowed: %v", err)
	}
}
