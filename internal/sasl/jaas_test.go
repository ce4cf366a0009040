package sasl

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a \"quoted\" \\ pass" debug=true;`)
	if err != nil {
		t.Fatal(err)
	}
	if j.LoginModule != PlainLoginModule || j.Flag != "required" {
		t.Fatalf("%+v", j)
	}
	users, err := j.PlainUsers()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"admin": "admin-secret", "alice": `a "quoted" \ pass`}
	if !maps.Equal(users, want) {
		t.Errorf("users %v, want %v", users, want)
	}
	if j.Options["debug"] != "true" || j.Options["username"] != "admin" {
		t.Errorf("options %v", j.Options)
	}
}

func TestParseJAASErrors(t *testing.T) {
	tests := map[string]string{
		``: "expected a login module",
		`org.apache.kafka.common.security.plain.PlainLoginModule user_a="x";`:         "expected a control flag",
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x"`: "missing ';'",
		`m required user_a="secret-x;`:                                                "unterminated",
		`m required user_a "secret-x";`:                                               "expected '='",
		`m required user_a="secret-1" user_a="secret-2";`:                             "appears twice",
		`m required a="1"; m required b="2";`:                                         "one login module only",
	}
	for in, want := range tests {
		_, err := ParseJAAS(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes a value: %v", in, err)
		}
	}
	j, _ := ParseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required;`)
	if _, err := j.PlainUsers(); err == nil {
		t.Error("a SCRAM login module gave PLAIN users")
	}
}
