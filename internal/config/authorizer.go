package config

import (
	"fmt"
	"strings"
)

// SkeinAuthorizer is the class name of Skein's own ACL authorizer.
const SkeinAuthorizer = "skein.security.StandardAuthorizer"

// authorizerAliases are Kafka's authorizer class names, which Skein's own
// implementation serves so that a Kafka server.properties runs unchanged.
var authorizerAliases = map[string]bool{
	SkeinAuthorizer: true,
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer": true,
	"kafka.security.authorizer.AclAuthorizer":                 true,
	"kafka.security.auth.SimpleAclAuthorizer":                 true,
}

func checkAuthorizerClass(v string) error {
	v = strings.TrimSpace(v)
	if v == "" || authorizerAliases[v] {
		return nil
	}
	return fmt.Errorf("authorizer class %q is not available: Skein cannot load Java classes; use %s (or Kafka's org.apache.kafka.metadata.authorizer.StandardAuthorizer, its alias), or leave it empty for no authorization", v, SkeinAuthorizer)
}

// authorizerClass resolves a checked authorizer.class.name.
func authorizerClass(v string) string {
	if strings.TrimSpace(v) == "" {
		return ""
	}
	return SkeinAuthorizer
}
