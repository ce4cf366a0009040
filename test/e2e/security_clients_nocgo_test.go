//go:build !cgo

package e2e

import "testing"

// secureConfluent needs cgo: confluent-kafka-go links the librdkafka its
// module bundles. scripts/test.sh runs this matrix again with
// CGO_ENABLED=1 for it (its main run is CGO_ENABLED=0).
func secureConfluent(t *testing.T, _ *secureCluster, _ secureMode, _, _ string) {
	t.Skip("confluent-kafka-go needs cgo (CGO_ENABLED=1 and gcc); scripts/test.sh runs it in its cgo step")
}
