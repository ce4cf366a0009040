package api

import "testing"

// TestServedOnByRole: a controller listener serves the controller's APIs,
// forwarded admin requests, ApiVersions, Fetch (the metadata log) and
// SASL, on a controller-only node and a combined node alike, and nothing
// else; a broker serves client APIs on its other listeners only.
func TestServedOnByRole(t *testing.T) {
	tests := []struct {
		key                         int16
		brokerClient, brokerCtrl    bool // node with the broker role
		controllerOnly, ctrlOnlyCli bool // controller-only node: controller listener, other listener
	}{
		{key: 0, brokerClient: true},                                          // Produce
		{key: 1, brokerClient: true, brokerCtrl: true, controllerOnly: true},  // Fetch
		{key: 3, brokerClient: true},                                          // Metadata
		{key: 10, brokerClient: true},                                         // FindCoordinator
		{key: 17, brokerClient: true, brokerCtrl: true, controllerOnly: true}, // SaslHandshake
		{key: 18, brokerClient: true, brokerCtrl: true, controllerOnly: true}, // ApiVersions
		{key: 36, brokerClient: true, brokerCtrl: true, controllerOnly: true}, // SaslAuthenticate
		{key: 19, brokerClient: true, brokerCtrl: true, controllerOnly: true}, // CreateTopics (forwarded)
		{key: 56, brokerCtrl: true, controllerOnly: true},                     // AlterPartition
		{key: 59, brokerCtrl: true, controllerOnly: true},                     // FetchSnapshot
		{key: 62, brokerCtrl: true, controllerOnly: true},                     // BrokerRegistration
	}
	for _, tt := range tests {
		sp, ok := Lookup(tt.key)
		if !ok {
			t.Fatalf("key %d not registered", tt.key)
		}
		got := [4]bool{sp.ServedOn(false, true), sp.ServedOn(true, true), sp.ServedOn(true, false), sp.ServedOn(false, false)}
		want := [4]bool{tt.brokerClient, tt.brokerCtrl, tt.controllerOnly, tt.ctrlOnlyCli}
		if got != want {
			t.Errorf("key %d: served (broker client, broker controller, controller-only controller, controller-only other) = %v, want %v", tt.key, got, want)
		}
	}
}

// TestControllerHandlersDoNotBlock: the controller-only handlers answer
// through ControllerBackend's callbacks, so a connection never gives them
// a goroutine of their own and the simulator, which has none to give,
// serves them through these same handlers.
func TestControllerHandlersDoNotBlock(t *testing.T) {
	n := 0
	for _, sp := range Specs() {
		if !sp.ControllerOnly {
			continue
		}
		n++
		if sp.Blocking {
			t.Errorf("controller-only key %d is Blocking", sp.Key)
		}
	}
	if n < 4 {
		t.Fatalf("%d controller-only keys, want at least AlterPartition, BrokerRegistration, BrokerHeartbeat, AllocateProducerIds", n)
	}
}
