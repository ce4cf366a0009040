package deploy

import (
	"strings"
	"testing"
)

// pod is what a pod of the StatefulSet knows about itself: the values its
// fieldRef variables resolve to.
type pod struct {
	name, namespace string
	ordinal         int
}

// podEnv computes a container's environment as the kubelet does, failing
// on a reference it cannot resolve (the kubelet would leave "$(NAME)" in
// the value and the broker would get a broken address).
func podEnv(t *testing.T, where string, c container, p pod) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, v := range c.Env {
		if _, dup := env[v.Name]; dup {
			t.Errorf("%s: env %s is set twice", where, v.Name)
		}
		value, err := expandKubernetesRefs(v.Value, env)
		if err != "" {
			t.Errorf("%s: env %s: %s", where, v.Name, err)
		}
		if v.ValueFrom != nil {
			value = resolveValueFrom(t, where, v, c, p)
		}
		env[v.Name] = value
	}
	return env
}

// resolveValueFrom gives the value of a downward-API variable.
func resolveValueFrom(t *testing.T, where string, v envVar, c container, p pod) string {
	t.Helper()
	switch {
	case v.ValueFrom.FieldRef != nil:
		switch path := v.ValueFrom.FieldRef.FieldPath; path {
		case "metadata.name":
			return p.name
		case "metadata.namespace":
			return p.namespace
		default:
			t.Errorf("%s: env %s: fieldRef %s is not emulated by this test", where, v.Name, path)
		}
	case v.ValueFrom.ResourceFieldRef != nil:
		// Without the resource set on the container, Kubernetes falls
		// back to the node's capacity, which says nothing useful.
		res := v.ValueFrom.ResourceFieldRef.Resource
		kind, name, _ := strings.Cut(res, ".")
		quantities := map[string]map[string]string{"limits": c.Resources.Limits, "requests": c.Resources.Requests}[kind]
		if q, ok := quantities[name]; ok {
			return q
		}
		t.Errorf("%s: env %s refers to %s, which the container does not set", where, v.Name, res)
	default:
		t.Errorf("%s: env %s: valueFrom of a kind this test does not emulate", where, v.Name)
	}
	return ""
}

// expandKubernetesRefs applies Kubernetes' rule for env values: "$(NAME)"
// becomes the value of NAME when NAME is defined earlier in the list, "$$"
// is a literal "$". It returns a description of the first unresolved
// reference, if any.
func expandKubernetesRefs(value string, defined map[string]string) (string, string) {
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		if value[i] != '$' || i+1 == len(value) {
			b.WriteByte(value[i])
			continue
		}
		switch value[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(value[i+2:], ')')
			if end < 0 {
				return "", "unterminated $( in " + value
			}
			name := value[i+2 : i+2+end]
			v, ok := defined[name]
			if !ok {
				return "", "$(" + name + ") refers to no variable defined above it"
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), ""
}

func TestExpandKubernetesRefs(t *testing.T) {
	defined := map[string]string{"POD_NAME": "skein-1", "NS": "prod"}
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "INTERNAL://$(POD_NAME).h.$(NS).svc:9092", want: "INTERNAL://skein-1.h.prod.svc:9092"},
		{in: "$$(POD_NAME)", want: "$(POD_NAME)"},
		{in: "cost $5 and $", want: "cost $5 and $"},
		{in: "$(MISSING)", err: "$(MISSING) refers to no variable defined above it"},
		{in: "$(POD_NAME", err: "unterminated $( in $(POD_NAME"},
	}
	for _, tc := range tests {
		got, err := expandKubernetesRefs(tc.in, defined)
		if got != tc.want || err != tc.err {
			t.Errorf("expand(%q) = %q, %q; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
