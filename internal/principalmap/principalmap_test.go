package principalmap

import "testing"

// The examples of Kafka's documentation for ssl.principal.mapping.rules.
func TestMapPrincipal(t *testing.T) {
	rules, err := ParseMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,
		RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,
		RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown": "serviceuser",
		"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown":          "adminuser@admin",
		"O=Skein,CN=Alice.Smith": "alice.smith",
		"O=Skein":                "O=Skein",
	} {
		if got, err := MapPrincipal(rules, dn); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", dn, got, err, want)
		}
	}
	strict, err := ParseMappingRules(`RULE:^CN=([^,]*),O=Skein$/$1/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := MapPrincipal(strict, "CN=bob,O=Skein"); err != nil || got != "BOB" {
		t.Errorf("upper-case rule: %q %v", got, err)
	}
	if _, err := MapPrincipal(strict, "CN=bob,O=Other"); err == nil {
		t.Error("a name no rule applies to was mapped")
	}
	for _, bad := range []string{"", "RULE:x", "RULE:(/x/", "DEFAULTS", "RULE:a/b/Q"} {
		if _, err := ParseMappingRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
