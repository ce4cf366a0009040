package deploy

import (
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/skein-log/skein/internal/config"
)

const (
	kubernetesDir = "kubernetes"
	// kubernetesSecureDir is the overlay with TLS and SCRAM; kustomize
	// renders it (its patches merge into kubernetesDir's objects).
	kubernetesSecureDir = "kubernetes-secure"
	// testNamespace stands in for whatever namespace the manifests are
	// applied to; nothing may depend on it being "default".
	testNamespace = "ns-under-test"
	// minGracePeriodSeconds leaves a broker time for a controlled shutdown
	// (moving leaderships away) before the kubelet kills it.
	minGracePeriodSeconds = 60
)

// kubernetesManifests is every object in deploy/kubernetes (or, rendered
// by kustomize, deploy/kubernetes-secure).
type kubernetesManifests struct {
	name     string // the directory applied
	set      statefulSet
	services map[string]service
	budgets  []podDisruptionBudget
	jobs     []job
}

// kubernetesDoc is one YAML document and where it came from.
type kubernetesDoc struct {
	where string
	node  *yaml.Node
}

// loadKubernetes decodes the files kustomization.yaml lists, each object
// into its type, strictly.
func loadKubernetes(t *testing.T) kubernetesManifests {
	t.Helper()
	var kust kustomization
	kustPath := filepath.Join(kubernetesDir, "kustomization.yaml")
	docs := yamlDocuments(t, kustPath)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", kustPath, len(docs))
	}
	if err := decodeStrict(docs[0], &kust); err != nil {
		t.Fatalf("%s: %v", kustPath, err)
	}
	var all []kubernetesDoc
	for _, res := range kust.Resources {
		path := filepath.Join(kubernetesDir, res)
		for i, doc := range yamlDocuments(t, path) {
			all = append(all, kubernetesDoc{fmt.Sprintf("%s document %d", path, i+1), doc})
		}
	}
	return decodeKubernetes(t, kubernetesDir, all)
}

// loadKubernetesSecure renders the secured overlay with kubectl
// kustomize (offline) and decodes what it would apply.
func loadKubernetesSecure(t *testing.T) kubernetesManifests {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: it renders " + kubernetesSecureDir)
	}
	out, err := exec.Command(kubectl, "kustomize", kubernetesSecureDir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", kubernetesSecureDir, err, out)
	}
	var docs []kubernetesDoc
	for i, doc := range yamlDocumentsOf(t, kubernetesSecureDir, out) {
		docs = append(docs, kubernetesDoc{fmt.Sprintf("%s (rendered) document %d", kubernetesSecureDir, i+1), doc})
	}
	return decodeKubernetes(t, kubernetesSecureDir, docs)
}

// forEachKubernetes runs check on deploy/kubernetes and on the rendered
// secured overlay.
func forEachKubernetes(t *testing.T, check func(t *testing.T, m kubernetesManifests)) {
	t.Run(kubernetesDir, func(t *testing.T) { check(t, loadKubernetes(t)) })
	t.Run(kubernetesSecureDir, func(t *testing.T) { check(t, loadKubernetesSecure(t)) })
}

// decodeKubernetes decodes documents, each object into its type, strictly.
func decodeKubernetes(t *testing.T, name string, docs []kubernetesDoc) kubernetesManifests {
	t.Helper()
	m := kubernetesManifests{name: name, services: map[string]service{}}
	sets := 0
	for _, d := range docs {
		where, doc := d.where, d.node
		var head typeMeta
		if err := doc.Decode(&head); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var err error
		switch head.Kind {
		case "StatefulSet":
			sets++
			err = decodeStrict(doc, &m.set)
		case "Service":
			var s service
			err = decodeStrict(doc, &s)
			if _, dup := m.services[s.Metadata.Name]; dup {
				t.Errorf("%s: a second service named %s", where, s.Metadata.Name)
			}
			m.services[s.Metadata.Name] = s
		case "PodDisruptionBudget":
			var b podDisruptionBudget
			err = decodeStrict(doc, &b)
			m.budgets = append(m.budgets, b)
		case "Job":
			var j job
			err = decodeStrict(doc, &j)
			m.jobs = append(m.jobs, j)
		default:
			t.Fatalf("%s: kind %q has no checks here; add them", where, head.Kind)
		}
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
	}
	if sets != 1 {
		t.Fatalf("%d StatefulSets, want 1", sets)
	}
	if n := len(m.set.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("StatefulSet %s: %d containers, want 1", m.set.Metadata.Name, n)
	}
	return m
}

func (m kubernetesManifests) container() container { return m.set.Spec.Template.Spec.Containers[0] }

// podBroker is one pod of the StatefulSet and the configuration its broker
// resolves.
type podBroker struct {
	pod pod
	cfg *config.Broker
}

// resolvePods computes, for each replica, the environment the kubelet gives
// it (the image's ENV, then the container's env) and the broker
// configuration that yields.
func (m kubernetesManifests) resolvePods(t *testing.T) []podBroker {
	t.Helper()
	imageEnv := dockerfileEnv(t)
	var out []podBroker
	for ordinal := range m.set.Spec.Replicas {
		p := pod{name: fmt.Sprintf("%s-%d", m.set.Metadata.Name, ordinal), namespace: testNamespace, ordinal: ordinal}
		where := "pod " + p.name
		env := maps.Clone(imageEnv)
		maps.Copy(env, podEnv(t, where, m.container(), p))
		// A pod's host name is its name, which node.id.source reads.
		out = append(out, podBroker{pod: p, cfg: resolveBroker(t, where, brokerProperties(t, where, env), p.name)})
	}
	return out
}

// podDNSName is a pod's stable name through the headless service.
func (m kubernetesManifests) podDNSName(ordinal int) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc", m.set.Metadata.Name, ordinal, m.set.Spec.ServiceName, testNamespace)
}

// containerPortNumber resolves a port given by number or by name.
func (m kubernetesManifests) containerPortNumber(p intOrString) (int, bool) {
	for _, cp := range m.container().Ports {
		if p.Name == "" && cp.ContainerPort == p.Number || p.Name != "" && cp.Name == p.Name {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func TestKubernetesKustomizationListsEveryManifest(t *testing.T) {
	var kust kustomization
	if err := decodeStrict(yamlDocuments(t, filepath.Join(kubernetesDir, "kustomization.yaml"))[0], &kust); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			want = append(want, base)
		}
	}
	got := slices.Sorted(slices.Values(kust.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml resources %v, want every manifest in %s: %v", got, kubernetesDir, want)
	}
}

func TestKubernetesPodIdentityAndQuorum(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		if m.set.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3: a quorum that survives one loss", m.set.Spec.Replicas)
		}
		if m.set.Spec.PodManagementPolicy != "Parallel" {
			t.Errorf("podManagementPolicy %q, want Parallel: no pod is ready before a majority of voters runs", m.set.Spec.PodManagementPolicy)
		}
		pods := m.resolvePods(t)
		first := pods[0].cfg
		for _, pb := range pods {
			where := "pod " + pb.pod.name
			if want := int32(pb.pod.ordinal + 1); pb.cfg.NodeID != want {
				t.Errorf("%s: node.id %d, want %d", where, pb.cfg.NodeID, want)
			}
			if !pb.cfg.HasRole(config.RoleBroker) || !pb.cfg.HasRole(config.RoleController) {
				t.Errorf("%s: process.roles %v, want broker and controller", where, pb.cfg.Roles)
			}
			if pb.cfg.ClusterID == "" || pb.cfg.ClusterID != first.ClusterID {
				t.Errorf("%s: cluster.id %q, want the same non-empty id on every pod", where, pb.cfg.ClusterID)
			}
			if !slices.Equal(pb.cfg.ControllerQuorumVoters, first.ControllerQuorumVoters) {
				t.Errorf("%s: voters %v differ from pod 0's %v", where, pb.cfg.ControllerQuorumVoters, first.ControllerQuorumVoters)
			}
		}
		voters := first.ControllerQuorumVoters
		if len(voters) != len(pods) {
			t.Fatalf("%d voters, want one per replica (%d)", len(voters), len(pods))
		}
		for _, pb := range pods {
			i := slices.IndexFunc(voters, func(v config.Voter) bool { return v.ID == pb.cfg.NodeID })
			if i < 0 {
				t.Errorf("pod %s (node %d) is not a voter", pb.pod.name, pb.cfg.NodeID)
				continue
			}
			ctl := controllerListener(t, pb.pod.name, pb.cfg)
			if v := voters[i]; v.Host != m.podDNSName(pb.pod.ordinal) || v.Port != ctl.Port {
				t.Errorf("voter %s: want %d@%s:%d, the pod's headless-service name and controller port",
					v, v.ID, m.podDNSName(pb.pod.ordinal), ctl.Port)
			}
		}
	})
}

func TestKubernetesListenersAndPorts(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		c := m.container()
		for _, pb := range m.resolvePods(t) {
			where := "pod " + pb.pod.name
			listening := map[int]bool{}
			for _, l := range pb.cfg.Listeners {
				listening[l.Port] = true
				if _, ok := m.containerPortNumber(intOrString{Number: l.Port}); !ok {
					t.Errorf("%s: listener %s has no containerPort", where, l)
				}
			}
			if len(pb.cfg.AdminListeners) != 1 {
				t.Fatalf("%s: admin.listeners %v, want one (the probes and /metrics use it)", where, pb.cfg.AdminListeners)
			}
			admin := pb.cfg.AdminListeners[0]
			listening[admin.Port] = true
			for _, cp := range c.Ports {
				if !listening[cp.ContainerPort] {
					t.Errorf("%s: containerPort %s (%d) has no listener", where, cp.Name, cp.ContainerPort)
				}
			}
			for _, a := range pb.cfg.AdvertisedListeners {
				l, _ := listenerNamed(pb.cfg.Listeners, a.Name) // config guarantees it exists
				if want := m.podDNSName(pb.pod.ordinal); a.Host != want || a.Port != l.Port {
					t.Errorf("%s: advertises %s, want %s://%s:%d", where, a, a.Name, want, l.Port)
				}
			}
			probes := []struct {
				name, path string
				p          *probe
			}{
				{"startupProbe", "/healthz", c.StartupProbe},
				{"livenessProbe", "/healthz", c.LivenessProbe},
				{"readinessProbe", "/readyz", c.ReadinessProbe},
			}
			for _, pr := range probes {
				if pr.p == nil || pr.p.HTTPGet == nil {
					t.Errorf("%s: no %s.httpGet", where, pr.name)
					continue
				}
				port, ok := m.containerPortNumber(pr.p.HTTPGet.Port)
				if pr.p.HTTPGet.Path != pr.path || !ok || port != admin.Port {
					t.Errorf("%s: %s gets %s on port %s, want %s on the admin port %d",
						where, pr.name, pr.p.HTTPGet.Path, pr.p.HTTPGet.Port, pr.path, admin.Port)
				}
			}
		}
	})
}

func TestKubernetesServices(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		pb := m.resolvePods(t)[0]
		interBroker, _ := listenerNamed(pb.cfg.Listeners, pb.cfg.InterBrokerListenerName)

		headless, ok := m.services[m.set.Spec.ServiceName]
		if !ok {
			t.Fatalf("serviceName %q names no service", m.set.Spec.ServiceName)
		}
		if headless.Spec.ClusterIP != "None" {
			t.Errorf("service %s: clusterIP %q, want None (headless: one DNS name per pod)", headless.Metadata.Name, headless.Spec.ClusterIP)
		}
		if !headless.Spec.PublishNotReadyAddresses {
			t.Errorf("service %s: publishNotReadyAddresses must be true: voters resolve each other before any is ready", headless.Metadata.Name)
		}
		clients := 0
		for _, s := range m.services {
			for _, p := range s.Spec.Ports {
				if _, ok := m.containerPortNumber(p.TargetPort); !ok {
					t.Errorf("service %s port %s: targetPort %s is not a containerPort", s.Metadata.Name, p.Name, p.TargetPort)
				}
			}
			if s.Metadata.Name == headless.Metadata.Name {
				continue
			}
			clients++
			if s.Spec.ClusterIP == "None" {
				t.Errorf("service %s: a client service needs a cluster IP to bootstrap from", s.Metadata.Name)
			}
			if !slices.ContainsFunc(s.Spec.Ports, func(p servicePort) bool {
				n, _ := m.containerPortNumber(p.TargetPort)
				return n == interBroker.Port
			}) {
				t.Errorf("service %s: no port reaches the broker listener %s", s.Metadata.Name, interBroker)
			}
		}
		if clients != 1 {
			t.Errorf("%d client services, want 1", clients)
		}
	})
}

// selects reports whether a selector picks pods with these labels; an
// empty selector is refused, as it would pick every pod in the namespace.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetesSelectorsPickTheBrokers(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		labels := m.set.Spec.Template.Metadata.Labels
		if !selects(m.set.Spec.Selector.MatchLabels, labels) {
			t.Errorf("StatefulSet selector %v does not match its pod labels %v", m.set.Spec.Selector.MatchLabels, labels)
		}
		for name, s := range m.services {
			if !selects(s.Spec.Selector, labels) {
				t.Errorf("service %s: selector %v does not match the broker pods %v", name, s.Spec.Selector, labels)
			}
		}
		if len(m.budgets) != 1 {
			t.Fatalf("%d PodDisruptionBudgets, want 1", len(m.budgets))
		}
		pdb := m.budgets[0]
		if !selects(pdb.Spec.Selector.MatchLabels, labels) {
			t.Errorf("PodDisruptionBudget %s: selector %v does not match the broker pods %v", pdb.Metadata.Name, pdb.Spec.Selector.MatchLabels, labels)
		}
		if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != (intOrString{Number: 1}) {
			t.Errorf("PodDisruptionBudget %s: want maxUnavailable: 1 alone (one broker down keeps quorum and min.insync.replicas)", pdb.Metadata.Name)
		}
		for _, term := range m.set.Spec.Template.Spec.Affinity.PodAntiAffinity.Preferred {
			if !selects(term.PodAffinityTerm.LabelSelector.MatchLabels, labels) {
				t.Errorf("anti-affinity selector %v does not match the broker pods", term.PodAffinityTerm.LabelSelector.MatchLabels)
			}
		}
	})
}

func TestKubernetesPodSafety(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		spec := m.set.Spec.Template.Spec
		c := m.container()
		isTrue := func(b *bool) bool { return b != nil && *b }
		isFalse := func(b *bool) bool { return b != nil && !*b }
		checks := []struct {
			ok   bool
			what string
		}{
			{isFalse(spec.EnableServiceLinks), "enableServiceLinks: false (service links inject SKEIN_* variables, which the broker refuses)"},
			{spec.TerminationGracePeriodSeconds >= minGracePeriodSeconds, fmt.Sprintf("terminationGracePeriodSeconds of at least %d", minGracePeriodSeconds)},
			{isTrue(spec.SecurityContext.RunAsNonRoot), "securityContext.runAsNonRoot: true"},
			{spec.SecurityContext.RunAsUser != nil && *spec.SecurityContext.RunAsUser != 0, "a non-zero runAsUser (the image has no USER)"},
			{spec.SecurityContext.FSGroup != nil, "an fsGroup, so the volume is writable by that user"},
			{isTrue(c.SecurityContext.ReadOnlyRootFilesystem), "container readOnlyRootFilesystem: true"},
			{isFalse(c.SecurityContext.AllowPrivilegeEscalation), "container allowPrivilegeEscalation: false"},
			{slices.Equal(c.SecurityContext.Capabilities.Drop, []string{"ALL"}), "container capabilities.drop: [ALL]"},
			{c.Resources.Requests["cpu"] != "" && c.Resources.Requests["memory"] != "", "cpu and memory requests"},
			{c.Resources.Limits["memory"] != "", "a memory limit"},
		}
		for _, ch := range checks {
			if !ch.ok {
				t.Errorf("StatefulSet %s: want %s", m.set.Metadata.Name, ch.what)
			}
		}
		for _, v := range c.Env {
			if v.ValueFrom != nil && strings.HasPrefix(v.Name, config.EnvPrefix) {
				t.Errorf("env %s: a SKEIN_* variable from the downward API; compute helpers under another prefix", v.Name)
			}
		}
	})
}

func TestKubernetesDataOnClaimedVolumes(t *testing.T) {
	forEachKubernetes(t, func(t *testing.T, m kubernetesManifests) {
		claims := map[string]bool{}
		for _, tmpl := range m.set.Spec.VolumeClaimTemplates {
			claims[tmpl.Metadata.Name] = true
			if tmpl.Spec.Resources.Requests["storage"] == "" || !slices.Equal(tmpl.Spec.AccessModes, []string{"ReadWriteOnce"}) {
				t.Errorf("volumeClaimTemplate %s: want ReadWriteOnce and a storage request", tmpl.Metadata.Name)
			}
		}
		if m.set.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != "Retain" ||
			m.set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != "Retain" {
			t.Errorf("persistentVolumeClaimRetentionPolicy should keep the data (Retain) on scale-down and deletion")
		}
		for _, pb := range m.resolvePods(t) {
			for _, dir := range pb.cfg.LogDirs {
				onClaim := slices.ContainsFunc(m.container().VolumeMounts, func(vm volumeMount) bool {
					return claims[vm.Name] && (dir == vm.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(vm.MountPath, "/")+"/"))
				})
				if !onClaim {
					t.Errorf("pod %s: log dir %s is not on a volume from volumeClaimTemplates; the data would not survive the pod", pb.pod.name, dir)
				}
			}
		}
	})
}
