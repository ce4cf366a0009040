package api

// ApiVersions: versions 0-3. v3 is flexible and carries client software
// name/version, which we accept and ignore. An unknown (too new) version is
// answered in v0 format with UNSUPPORTED_VERSION by the connection layer,
// see UnsupportedApiVersions.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
)

func init() {
	register(Spec{Key: 18, MinVersion: 0, MaxVersion: 3, Handle: handleApiVersions, ForControllers: true})
}

func handleApiVersions(s *Server, r *Request, respond Respond) {
	resp := r.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertisedKeys(r.ControllerListener, s.Backend.Config().HasRole(config.RoleBroker))
	if r.Version >= 3 {
		apiVersionsFeatures(s, resp)
	}
	respond(resp)
}

func advertisedKeys(controllerListener, brokerRole bool) []kmsg.ApiVersionsResponseApiKey {
	specs := Specs()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(specs))
	for _, sp := range specs {
		if !sp.ServedOn(controllerListener, brokerRole) {
			continue
		}
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{
			ApiKey: sp.Key, MinVersion: sp.MinVersion, MaxVersion: sp.MaxVersion,
		})
	}
	return keys
}

// UnsupportedApiVersions builds the answer to an ApiVersions request whose
// version we do not know: v0 format, UNSUPPORTED_VERSION, and our own range
// for key 18 so the client retries with a version we accept.
func UnsupportedApiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	sp := registry[18]
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: sp.MinVersion, MaxVersion: sp.MaxVersion}}
	return resp
}
