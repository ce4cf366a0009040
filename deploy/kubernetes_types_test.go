package deploy

// The Kubernetes objects the manifests use, reduced to the fields they set.
// Decoded strictly (decodeStrict): every field name here was checked
// against the Kubernetes API reference, so a manifest field these types do
// not know is either misspelt or new and in need of a check.

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

// typeMeta is read first, to pick the type a document decodes into.
type typeMeta struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
}

type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type statefulSet struct {
	APIVersion string          `yaml:"apiVersion"`
	Kind       string          `yaml:"kind"`
	Metadata   objectMeta      `yaml:"metadata"`
	Spec       statefulSetSpec `yaml:"spec"`
}

type statefulSetSpec struct {
	ServiceName         string `yaml:"serviceName"`
	Replicas            int    `yaml:"replicas"`
	PodManagementPolicy string `yaml:"podManagementPolicy"`
	UpdateStrategy      struct {
		Type string `yaml:"type"`
	} `yaml:"updateStrategy"`
	PersistentVolumeClaimRetentionPolicy struct {
		WhenDeleted string `yaml:"whenDeleted"`
		WhenScaled  string `yaml:"whenScaled"`
	} `yaml:"persistentVolumeClaimRetentionPolicy"`
	Selector             labelSelector                   `yaml:"selector"`
	Template             podTemplate                     `yaml:"template"`
	VolumeClaimTemplates []persistentVolumeClaimTemplate `yaml:"volumeClaimTemplates"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	EnableServiceLinks            *bool              `yaml:"enableServiceLinks"`
	TerminationGracePeriodSeconds int                `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               podSecurityContext `yaml:"securityContext"`
	Affinity                      struct {
		PodAntiAffinity struct {
			Preferred []struct {
				Weight          int `yaml:"weight"`
				PodAffinityTerm struct {
					TopologyKey   string        `yaml:"topologyKey"`
					LabelSelector labelSelector `yaml:"labelSelector"`
				} `yaml:"podAffinityTerm"`
			} `yaml:"preferredDuringSchedulingIgnoredDuringExecution"`
		} `yaml:"podAntiAffinity"`
	} `yaml:"affinity"`
	Containers    []container `yaml:"containers"`
	Volumes       []volume    `yaml:"volumes"`
	RestartPolicy string      `yaml:"restartPolicy"`
}

// volume is a pod volume; the manifests mount Secrets only (claims come
// from volumeClaimTemplates).
type volume struct {
	Name   string `yaml:"name"`
	Secret *struct {
		SecretName  string `yaml:"secretName"`
		DefaultMode *int   `yaml:"defaultMode"`
	} `yaml:"secret"`
}

type podSecurityContext struct {
	RunAsNonRoot        *bool  `yaml:"runAsNonRoot"`
	RunAsUser           *int64 `yaml:"runAsUser"`
	RunAsGroup          *int64 `yaml:"runAsGroup"`
	FSGroup             *int64 `yaml:"fsGroup"`
	FSGroupChangePolicy string `yaml:"fsGroupChangePolicy"`
	SeccompProfile      struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type container struct {
	Name            string                   `yaml:"name"`
	Image           string                   `yaml:"image"`
	Command         []string                 `yaml:"command"`
	ImagePullPolicy string                   `yaml:"imagePullPolicy"`
	Ports           []containerPort          `yaml:"ports"`
	Env             []envVar                 `yaml:"env"`
	StartupProbe    *probe                   `yaml:"startupProbe"`
	LivenessProbe   *probe                   `yaml:"livenessProbe"`
	ReadinessProbe  *probe                   `yaml:"readinessProbe"`
	Resources       resourceRequirements     `yaml:"resources"`
	SecurityContext containerSecurityContext `yaml:"securityContext"`
	VolumeMounts    []volumeMount            `yaml:"volumeMounts"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly"`
}

type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
		ResourceFieldRef *struct {
			Resource string `yaml:"resource"`
		} `yaml:"resourceFieldRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	TimeoutSeconds   int `yaml:"timeoutSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type resourceRequirements struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

type containerSecurityContext struct {
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

// persistentVolumeClaimTemplate is a PersistentVolumeClaim template.
type persistentVolumeClaimTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     struct {
		AccessModes []string             `yaml:"accessModes"`
		Resources   resourceRequirements `yaml:"resources"`
	} `yaml:"spec"`
}

type service struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Type                     string            `yaml:"type"`
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []servicePort     `yaml:"ports"`
	} `yaml:"spec"`
}

type servicePort struct {
	Name       string      `yaml:"name"`
	Port       int         `yaml:"port"`
	TargetPort intOrString `yaml:"targetPort"`
}

type podDisruptionBudget struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		MaxUnavailable *intOrString  `yaml:"maxUnavailable"`
		MinAvailable   *intOrString  `yaml:"minAvailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

// job runs a tool once (deploy/kubernetes-secure's create-admin).
type job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		BackoffLimit int         `yaml:"backoffLimit"`
		Template     podTemplate `yaml:"template"`
	} `yaml:"spec"`
}
