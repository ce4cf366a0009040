package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/skein-log/skein/internal/authz"
)

// secretMount is where container c mounts a volume of the pod spec that
// holds the Secret secret ("" if none).
func secretMount(spec podSpec, c container, secret string) string {
	for _, v := range spec.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secret {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name && vm.ReadOnly {
				return vm.MountPath
			}
		}
	}
	return ""
}

// TestKubernetesSecureListeners: in deploy/kubernetes-secure (as kustomize
// renders it) no listener is plaintext; the nodes' own listeners need
// client certificates, from the Secret skein-tls mounted read-only, whose
// certificate maps to a super user; clients log in with SCRAM over TLS
// through a service; the Job that creates the admin user dials the
// brokers' INTERNAL listeners with files from the same Secret, and that
// user is a super user.
func TestKubernetesSecureListeners(t *testing.T) {
	m := loadKubernetesSecure(t)
	const secret = "skein-tls"
	cn := nodeCertCN(t)
	mount := secretMount(m.set.Spec.Template.Spec, m.container(), secret)
	if mount == "" {
		t.Fatalf("StatefulSet %s: no read-only mount of the Secret %s", m.set.Metadata.Name, secret)
	}
	pods := m.resolvePods(t)
	var internal []string
	for _, pb := range pods {
		where := "pod " + pb.pod.name
		for _, l := range checkSecuredListeners(t, where, pb.cfg, mount, cn) {
			reachable := false
			for _, s := range m.services {
				for _, p := range s.Spec.Ports {
					if n, _ := m.containerPortNumber(p.TargetPort); n == l.Port && s.Spec.ClusterIP != "None" {
						reachable = true
					}
				}
			}
			if !reachable {
				t.Errorf("%s: no client service port reaches %s", where, l)
			}
		}
		for _, a := range pb.cfg.AdvertisedListeners {
			if a.Name == pb.cfg.InterBrokerListenerName {
				internal = append(internal, strings.TrimPrefix(a.String(), a.Name+"://"))
			}
		}
	}

	if len(m.jobs) != 1 {
		t.Fatalf("%d Jobs, want the one that creates the admin user", len(m.jobs))
	}
	j := m.jobs[0]
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 || spec.RestartPolicy != "OnFailure" {
		t.Fatalf("Job %s: %d containers, restartPolicy %q; want one, retried OnFailure until the brokers answer", j.Metadata.Name, len(spec.Containers), spec.RestartPolicy)
	}
	c := spec.Containers[0]
	env := podEnv(t, "Job "+j.Metadata.Name, c, pod{name: j.Metadata.Name, namespace: testNamespace})
	flag := func(name string) string {
		i := slices.Index(c.Command, name)
		if i < 0 || i+1 >= len(c.Command) {
			t.Fatalf("Job %s: command has no %s", j.Metadata.Name, name)
		}
		v, err := expandKubernetesRefs(c.Command[i+1], env)
		if err != "" {
			t.Errorf("Job %s: %s %s: %s", j.Metadata.Name, name, c.Command[i+1], err)
		}
		return v
	}
	jobMount := secretMount(spec, c, secret)
	for _, file := range []string{flag("--command-config"), flag("--password-file")} {
		if jobMount == "" || !strings.HasPrefix(file, jobMount+"/") {
			t.Errorf("Job %s reads %s, outside a read-only mount of the Secret %s", j.Metadata.Name, file, secret)
		}
	}
	if got := strings.Split(flag("--bootstrap-server"), ","); !slices.Equal(got, internal) {
		t.Errorf("Job %s dials %v, want the brokers' INTERNAL listeners %v", j.Metadata.Name, got, internal)
	}
	admin := authz.Principal{Type: "User", Name: flag("--name")}
	for _, pb := range pods {
		if !pb.cfg.SuperUsers[admin] {
			t.Errorf("pod %s: %s, whom the Job creates, is not in super.users", pb.pod.name, admin)
		}
	}
	if !strings.Contains(readFile(t, makeCertsPath), "SKEIN_CERT_HOSTS") {
		t.Errorf("%s cannot add the pods' names (SKEIN_CERT_HOSTS) to the certificate", makeCertsPath)
	}
}
