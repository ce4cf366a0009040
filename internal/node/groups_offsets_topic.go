package node

import (
	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/grouphost"
)

// Groups serves the group APIs through the shared adapter over this
// broker's coordinators.
func (x backend) Groups() api.GroupBackend { return grouphost.Backend{Hosts: x.b.groups} }

// EnsureOffsetsTopic is grouphost.Hosts'.
func (rt *groupRuntime) EnsureOffsetsTopic(done func(error)) { rt.offsetsTopic.ensure(done) }
