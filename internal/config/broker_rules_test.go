package config

import (
	"cmp"
	"reflect"
	"strings"
	"testing"
)

func TestNetworkResolution(t *testing.T) {
	tests := []struct {
		name           string
		props          map[string]string
		wantInter      string
		wantAdvertised []string
		wantVoters     []Voter
		wantController string // listener name, "" when none
		wantDial       string // BrokerDialListener when not wantInter
	}{
		{
			name:           "wildcard host keeps advertised empty and voter at localhost",
			props:          map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://0.0.0.0:9093"},
			wantInter:      "PLAINTEXT",
			wantAdvertised: []string{"PLAINTEXT://:9092"},
			wantVoters:     []Voter{{ID: 1, Host: "localhost", Port: 9093}},
			wantController: "CONTROLLER",
		},
		{
			name: "internal and external listeners",
			props: map[string]string{
				"listeners":                      "INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:19092,CONTROLLER://0.0.0.0:9093",
				"advertised.listeners":           "INTERNAL://broker-1:9092,EXTERNAL://localhost:19092",
				"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
				"inter.broker.listener.name":     "internal",
				"controller.quorum.voters":       "1@broker-1:9093,2@broker-2:9093,3@broker-3:9093",
			},
			wantInter:      "INTERNAL",
			wantAdvertised: []string{"INTERNAL://broker-1:9092", "EXTERNAL://localhost:19092"},
			wantVoters:     []Voter{{1, "broker-1", 9093}, {2, "broker-2", 9093}, {3, "broker-3", 9093}},
			wantController: "CONTROLLER",
		},
		{
			name: "broker-only node",
			props: map[string]string{
				"node.id":                  "4",
				"process.roles":            "broker",
				"listeners":                "PLAINTEXT://127.0.0.1:9392",
				"controller.quorum.voters": "1@127.0.0.1:9093",
			},
			wantInter:      "PLAINTEXT",
			wantAdvertised: []string{"PLAINTEXT://127.0.0.1:9392"},
			wantVoters:     []Voter{{1, "127.0.0.1", 9093}},
		},
		{
			name: "controller-only node",
			props: map[string]string{
				"process.roles": "controller",
				"listeners":     "CONTROLLER://127.0.0.1:9093",
			},
			wantVoters:     []Voter{{1, "127.0.0.1", 9093}},
			wantController: "CONTROLLER",
		},
		{
			name: "controller-only node dialing the brokers for the balancer",
			props: map[string]string{
				"process.roles":                  "controller",
				"listeners":                      "CONTROLLER://127.0.0.1:9093",
				"inter.broker.listener.name":     "internal",
				"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT",
			},
			wantVoters:     []Voter{{1, "127.0.0.1", 9093}},
			wantController: "CONTROLLER",
			wantDial:       "INTERNAL",
		},
		{
			name: "Kafka 4 style advertised controller listener is kept",
			props: map[string]string{
				"advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
			},
			wantInter:      "PLAINTEXT",
			wantAdvertised: []string{"PLAINTEXT://localhost:9092", "CONTROLLER://localhost:9093"},
			wantVoters:     []Voter{{1, "127.0.0.1", 9093}},
			wantController: "CONTROLLER",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBroker(tt.props)
			if err != nil {
				t.Fatalf("NewBroker: %v", err)
			}
			if b.InterBrokerListenerName != tt.wantInter {
				t.Errorf("InterBrokerListenerName = %q, want %q", b.InterBrokerListenerName, tt.wantInter)
			}
			if want := cmp.Or(tt.wantDial, tt.wantInter); b.BrokerDialListener != want {
				t.Errorf("BrokerDialListener = %q, want %q", b.BrokerDialListener, want)
			}
			var advertised []string
			for _, l := range b.AdvertisedListeners {
				if l.SecurityProtocol != "PLAINTEXT" {
					t.Errorf("advertised %s has protocol %q", l, l.SecurityProtocol)
				}
				advertised = append(advertised, l.String())
			}
			if !reflect.DeepEqual(advertised, tt.wantAdvertised) {
				t.Errorf("AdvertisedListeners = %v, want %v", advertised, tt.wantAdvertised)
			}
			if !reflect.DeepEqual(b.ControllerQuorumVoters, tt.wantVoters) {
				t.Errorf("ControllerQuorumVoters = %v, want %v", b.ControllerQuorumVoters, tt.wantVoters)
			}
			l, ok := b.ControllerListener()
			if ok != (tt.wantController != "") || l.Name != tt.wantController {
				t.Errorf("ControllerListener() = %v, %v, want %q", l, ok, tt.wantController)
			}
		})
	}
}

func TestCrossPropertyRules(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{
			name:  "controller listener missing",
			props: map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"},
			want:  `config: controller.listener.names="CONTROLLER": must be the name of a listener in listeners when process.roles includes controller (listeners has PLAINTEXT)`,
		},
		{
			name:  "controller listener names empty",
			props: map[string]string{"controller.listener.names": ""},
			want:  `config: controller.listener.names="": must be non-empty when process.roles includes controller`,
		},
		{
			name:  "SASL listener without users",
			props: map[string]string{"listeners": "PLAINTEXT://h:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"},
			want:  `config: sasl.jaas.config=(hidden): must be set (or listener.name.sasl_plaintext.plain.sasl.jaas.config) for SASL_PLAINTEXT listener SASL_PLAINTEXT: it lists the PLAIN users`,
		},
		{
			name:  "TLS listener without key store",
			props: map[string]string{"listeners": "PLAINTEXT://h:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"},
			want:  `config: ssl.keystore.location="": must be set (or ssl.keystore.certificate.chain and ssl.keystore.key) for SSL listener SSL`,
		},
		{
			name:  "listener without protocol",
			props: map[string]string{"listeners": "FOO://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"},
			want:  `config: listener.security.protocol.map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL": must be a map covering every listener: FOO has no security protocol`,
		},
		{
			name:  "inter-broker listener is the controller's",
			props: map[string]string{"inter.broker.listener.name": "CONTROLLER"},
			want:  `config: inter.broker.listener.name="CONTROLLER": must be a listener that is not in controller.listener.names`,
		},
		{
			name:  "inter-broker listener unknown",
			props: map[string]string{"inter.broker.listener.name": "INTERNAL"},
			want:  `config: inter.broker.listener.name="INTERNAL": must be the name of a listener in listeners (PLAINTEXT, CONTROLLER)`,
		},
		{
			name:  "broker role without broker listener",
			props: map[string]string{"listeners": "CONTROLLER://127.0.0.1:9093"},
			want:  `config: listeners="CONTROLLER://127.0.0.1:9093": must be a list with a broker listener besides the controller listeners`,
		},
		{
			name:  "broker-only node listening as controller",
			props: map[string]string{"process.roles": "broker", "controller.quorum.voters": "2@h:9093"},
			want:  `config: listeners="PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093": must be free of controller listeners on a node without the controller role (CONTROLLER is one)`,
		},
		{
			name:  "advertised wildcard",
			props: map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
			want:  `config: advertised.listeners="PLAINTEXT://0.0.0.0:9092": must be dialable addresses: PLAINTEXT://0.0.0.0:9092 has no concrete host and port`,
		},
		{
			name:  "advertised port zero",
			props: map[string]string{"advertised.listeners": "PLAINTEXT://h:0"},
			want:  `config: advertised.listeners="PLAINTEXT://h:0": must be dialable addresses: PLAINTEXT://h:0 has no concrete host and port`,
		},
		{
			name:  "advertised unknown listener",
			props: map[string]string{"advertised.listeners": "PLAINTEXT://h:9092,OTHER://h:1"},
			want:  `config: advertised.listeners="PLAINTEXT://h:9092,OTHER://h:1": must be addresses of listeners in listeners (PLAINTEXT, CONTROLLER): OTHER is not one`,
		},
		{
			name:  "advertised without inter-broker listener",
			props: map[string]string{"advertised.listeners": "CONTROLLER://h:9093"},
			want:  `config: advertised.listeners="CONTROLLER://h:9093": must be a list including the inter-broker listener PLAINTEXT`,
		},
		{
			name:  "broker-only without voters",
			props: map[string]string{"process.roles": "broker", "listeners": "PLAINTEXT://h:9092"},
			want:  `config: controller.quorum.voters="": must be non-empty on a node without the controller role`,
		},
		{
			name:  "controller not among voters",
			props: map[string]string{"node.id": "4", "controller.quorum.voters": "1@h:9093,2@h:9193"},
			want:  `config: node.id="4": must be one of the controller.quorum.voters ids (1, 2) on a controller`,
		},
		{
			name: "broker-only node among voters",
			props: map[string]string{
				"process.roles": "broker", "listeners": "PLAINTEXT://h:9092", "controller.quorum.voters": "1@h:9093",
			},
			want: `config: node.id="1": must be none of the controller.quorum.voters ids (1) on a broker-only node`,
		},
		{
			name:  "controller-only node with a client listener",
			props: map[string]string{"process.roles": "controller"},
			want:  `config: listeners="PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093": must be only controller listeners (CONTROLLER) on a controller-only node (PLAINTEXT is not one)`,
		},
		{
			name: "controller-only node advertising a client listener",
			props: map[string]string{
				"process.roles": "controller", "listeners": "CONTROLLER://h:9093", "advertised.listeners": "PLAINTEXT://h:9092",
			},
			want: `config: advertised.listeners="PLAINTEXT://h:9092": must be free of client listeners on a controller-only node (PLAINTEXT is one)`,
		},
		{
			name: "controller-only node dialing brokers on a controller listener",
			props: map[string]string{
				"process.roles": "controller", "listeners": "CONTROLLER://h:9093", "inter.broker.listener.name": "CONTROLLER",
			},
			want: `config: inter.broker.listener.name="CONTROLLER": must be a listener that is not in controller.listener.names`,
		},
		{
			name: "controller-only node dialing brokers on a listener of unknown protocol",
			props: map[string]string{
				"process.roles": "controller", "listeners": "CONTROLLER://h:9093", "inter.broker.listener.name": "INTERNAL",
			},
			want: `config: listener.security.protocol.map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL": must be an entry for INTERNAL, the brokers' listener inter.broker.listener.name names on this controller-only node`,
		},
		{
			name: "controller-only node not among voters",
			props: map[string]string{
				"process.roles": "controller", "node.id": "4", "listeners": "CONTROLLER://h:9093", "controller.quorum.voters": "1@h:9093",
			},
			want: `config: node.id="4": must be one of the controller.quorum.voters ids (1) on a controller`,
		},
		{
			name: "broker-only node without controller listener names",
			props: map[string]string{
				"process.roles": "broker", "node.id": "4", "listeners": "PLAINTEXT://h:9092",
				"controller.quorum.voters": "1@h:9093", "controller.listener.names": "",
			},
			want: `config: controller.listener.names="": must be non-empty on a broker-only node`,
		},
		{
			name:  "unknown role",
			props: map[string]string{"process.roles": "broker,voter"},
			want:  `config: process.roles="broker,voter": must be a non-empty comma-separated list of broker, controller: "voter" is not allowed`,
		},
		{
			name:  "heartbeat not shorter than session",
			props: map[string]string{"broker.heartbeat.interval.ms": "9000"},
			want:  `config: broker.heartbeat.interval.ms="9000": must be less than broker.session.timeout.ms (9000)`,
		},
		{
			name:  "empty group session window",
			props: map[string]string{"group.min.session.timeout.ms": "10000", "group.max.session.timeout.ms": "9999"},
			want:  `config: group.min.session.timeout.ms="10000": must be at most group.max.session.timeout.ms (9999)`,
		},
		{
			name:  "fetch wait longer than lag time",
			props: map[string]string{"replica.lag.time.max.ms": "400"},
			want:  `config: replica.fetch.wait.max.ms="500": must be at most replica.lag.time.max.ms (400)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBroker(tt.props)
			if err == nil {
				t.Fatal("NewBroker succeeded, want an error")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got  %s\n want %s", err, tt.want)
			}
		})
	}
}

// TestEveryPropertyReachesBroker changes each non-ignored broker property in
// turn and checks the typed Broker changes: a property nothing reads would
// be a lie in the documentation. A new property fails here until it is
// wired into Broker (or TopicDefaults) and given a value below.
func TestEveryPropertyReachesBroker(t *testing.T) {
	changed := map[string]map[string]string{
		"admin.listeners":                                             {"admin.listeners": "http://127.0.0.1:9644"},
		"advertised.listeners":                                        {"advertised.listeners": "PLAINTEXT://example:9092"},
		"auto.create.topics.enable":                                   {"auto.create.topics.enable": "false"},
		"admin.pprof.enable":                                          {"admin.pprof.enable": "true"},
		"auto.leader.rebalance.enable":                                {"auto.leader.rebalance.enable": "false"},
		"broker.heartbeat.interval.ms":                                {"broker.heartbeat.interval.ms": "1000"},
		"broker.rack":                                                 {"broker.rack": "r1"},
		"broker.session.timeout.ms":                                   {"broker.session.timeout.ms": "8000"},
		"cluster.id":                                                  {"cluster.id": "abc"},
		"compression.type":                                            {"compression.type": "zstd"},
		"connections.max.idle.ms":                                     {"connections.max.idle.ms": "1"},
		"controller.listener.names":                                   {"controller.listener.names": "RAFT", "listeners": "PLAINTEXT://h:1,RAFT://h:2", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,RAFT:PLAINTEXT"},
		"controller.quorum.voters":                                    {"controller.quorum.voters": "1@h:1,2@h:2"},
		"default.replication.factor":                                  {"default.replication.factor": "3"},
		"delete.topic.enable":                                         {"delete.topic.enable": "false"},
		"authorizer.class.name":                                       {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
		"super.users":                                                 {"super.users": "User:admin;User:ops"},
		"allow.everyone.if.no.acl.found":                              {"allow.everyone.if.no.acl.found": "true"},
		"group.initial.rebalance.delay.ms":                            {"group.initial.rebalance.delay.ms": "0"},
		"group.max.session.timeout.ms":                                {"group.max.session.timeout.ms": "60000"},
		"group.max.size":                                              {"group.max.size": "10"},
		"group.min.session.timeout.ms":                                {"group.min.session.timeout.ms": "1000"},
		"security.inter.broker.protocol":                              {"security.inter.broker.protocol": "SSL", "listeners": "PLAINTEXT://h:1,SSL://h:2,CONTROLLER://h:3", "ssl.keystore.location": "/k.pem", "ssl.truststore.location": "/ca.pem", "ssl.client.auth": "required", "super.users": "User:CN=b"},
		"inter.broker.listener.name":                                  {"inter.broker.listener.name": "B", "listeners": "A://h:1,B://h:2,CONTROLLER://h:3", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT,CONTROLLER:PLAINTEXT"},
		"leader.imbalance.check.interval.seconds":                     {"leader.imbalance.check.interval.seconds": "1"},
		"listener.security.protocol.map":                              {"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,X:PLAINTEXT", "listeners": "X://h:1,PLAINTEXT://h:2,CONTROLLER://h:3"},
		"listeners":                                                   {"listeners": "PLAINTEXT://h:1,CONTROLLER://h:2"},
		"log.cleanup.policy":                                          {"log.cleanup.policy": "compact"},
		"log.cleaner.backoff.ms":                                      {"log.cleaner.backoff.ms": "100"},
		"log.cleaner.dedupe.buffer.size":                              {"log.cleaner.dedupe.buffer.size": "2097152"},
		"log.cleaner.delete.retention.ms":                             {"log.cleaner.delete.retention.ms": "5"},
		"log.cleaner.enable":                                          {"log.cleaner.enable": "false"},
		"log.cleaner.max.compaction.lag.ms":                           {"log.cleaner.max.compaction.lag.ms": "7"},
		"log.cleaner.min.cleanable.ratio":                             {"log.cleaner.min.cleanable.ratio": "0.25"},
		"log.cleaner.min.compaction.lag.ms":                           {"log.cleaner.min.compaction.lag.ms": "9"},
		"log.dir":                                                     {"log.dir": "/x"},
		"log.dirs":                                                    {"log.dirs": "/x,/y"},
		"log.dir.min.free.bytes":                                      {"log.dir.min.free.bytes": "1"},
		"log.open.files.per.replica":                                  {"log.open.files.per.replica": "2"},
		"log.page.cache.window.bytes":                                 {"log.page.cache.window.bytes": "1048576"},
		"log.page.cache.broker.bytes":                                 {"log.page.cache.broker.bytes": "1073741824"},
		"log.dir.min.free.percent":                                    {"log.dir.min.free.percent": "2.5"},
		"log.flush.interval.messages":                                 {"log.flush.interval.messages": "1"},
		"log.flush.interval.ms":                                       {"log.flush.interval.ms": "1"},
		"log.format":                                                  {"log.format": "json"},
		"log.fsync.io.uring.enable":                                   {"log.fsync.io.uring.enable": "false"},
		"log.index.interval.bytes":                                    {"log.index.interval.bytes": "1"},
		"log.index.size.max.bytes":                                    {"log.index.size.max.bytes": "1024"},
		"log.level":                                                   {"log.level": "debug"},
		"log.message.timestamp.type":                                  {"log.message.timestamp.type": "LogAppendTime"},
		"log.message.timestamp.before.max.ms":                         {"log.message.timestamp.before.max.ms": "1"},
		"log.message.timestamp.after.max.ms":                          {"log.message.timestamp.after.max.ms": "1"},
		"log.retention.bytes":                                         {"log.retention.bytes": "1"},
		"log.retention.check.interval.ms":                             {"log.retention.check.interval.ms": "1"},
		"log.retention.hours":                                         {"log.retention.hours": "1"},
		"log.retention.minutes":                                       {"log.retention.minutes": "1"},
		"log.retention.ms":                                            {"log.retention.ms": "1"},
		"log.roll.hours":                                              {"log.roll.hours": "1"},
		"log.roll.ms":                                                 {"log.roll.ms": "1"},
		"log.segment.bytes":                                           {"log.segment.bytes": "1024"},
		"max.connections":                                             {"max.connections": "1"},
		"message.max.bytes":                                           {"message.max.bytes": "1"},
		"min.insync.replicas":                                         {"min.insync.replicas": "2"},
		"node.id":                                                     {"node.id": "2"},
		"quota.window.num":                                            {"quota.window.num": "2"},
		"quota.window.size.seconds":                                   {"quota.window.size.seconds": "2"},
		"node.id.source":                                              {"node.id.source": "hostname-ordinal"},
		"num.partitions":                                              {"num.partitions": "2"},
		"offset.metadata.max.bytes":                                   {"offset.metadata.max.bytes": "1"},
		"offsets.retention.check.interval.ms":                         {"offsets.retention.check.interval.ms": "1"},
		"offsets.retention.minutes":                                   {"offsets.retention.minutes": "1"},
		"offsets.topic.num.partitions":                                {"offsets.topic.num.partitions": "1"},
		"offsets.topic.replication.factor":                            {"offsets.topic.replication.factor": "1"},
		"offsets.topic.segment.bytes":                                 {"offsets.topic.segment.bytes": "1024"},
		"outbound.bind.address":                                       {"outbound.bind.address": "127.0.0.2"},
		"process.roles":                                               {"process.roles": "controller", "listeners": "CONTROLLER://h:1"},
		"producer.id.expiration.ms":                                   {"producer.id.expiration.ms": "1"},
		"queued.max.requests":                                         {"queued.max.requests": "1"},
		"max.incremental.fetch.session.cache.slots":                   {"max.incremental.fetch.session.cache.slots": "7"},
		"replica.fetch.max.bytes":                                     {"replica.fetch.max.bytes": "1"},
		"leader.replication.throttled.rate":                           {"leader.replication.throttled.rate": "1048576"},
		"follower.replication.throttled.rate":                         {"follower.replication.throttled.rate": "1048576"},
		"replica.alter.log.dirs.io.max.bytes.per.second":              {"replica.alter.log.dirs.io.max.bytes.per.second": "1048576"},
		"replica.fetch.min.bytes":                                     {"replica.fetch.min.bytes": "2"},
		"replica.fetch.response.max.bytes":                            {"replica.fetch.response.max.bytes": "1"},
		"replica.fetch.wait.max.ms":                                   {"replica.fetch.wait.max.ms": "1"},
		"replica.lag.time.max.ms":                                     {"replica.lag.time.max.ms": "1000"},
		"socket.receive.buffer.bytes":                                 {"socket.receive.buffer.bytes": "-1"},
		"socket.request.max.bytes":                                    {"socket.request.max.bytes": "1"},
		"socket.send.buffer.bytes":                                    {"socket.send.buffer.bytes": "-1"},
		"unclean.leader.election.enable":                              {"unclean.leader.election.enable": "true"},
		"write.caching":                                               {"write.caching": "true"},
		"max.connections.per.ip":                                      {"max.connections.per.ip": "5"},
		"max.connections.per.ip.overrides":                            {"max.connections.per.ip.overrides": "127.0.0.2:7,[::1]:0"},
		"max.connection.creation.rate":                                {"max.connection.creation.rate": "10"},
		"queued.max.request.bytes":                                    {"queued.max.request.bytes": "-1"},
		"fetch.response.max.inflight.bytes":                           {"fetch.response.max.inflight.bytes": "2097152"},
		"socket.request.read.timeout.ms":                              {"socket.request.read.timeout.ms": "5"},
		"connection.failed.authentication.delay.ms":                   {"connection.failed.authentication.delay.ms": "5"},
		"transaction.state.log.replication.factor":                    {"transaction.state.log.replication.factor": "1"},
		"transaction.state.log.num.partitions":                        {"transaction.state.log.num.partitions": "1"},
		"transaction.state.log.min.isr":                               {"transaction.state.log.min.isr": "1"},
		"transaction.state.log.segment.bytes":                         {"transaction.state.log.segment.bytes": "1024"},
		"transaction.max.timeout.ms":                                  {"transaction.max.timeout.ms": "1000"},
		"transaction.partition.verification.enable":                   {"transaction.partition.verification.enable": "false"},
		"add.partitions.to.txn.retry.backoff.ms":                      {"add.partitions.to.txn.retry.backoff.ms": "5"},
		"add.partitions.to.txn.retry.backoff.max.ms":                  {"add.partitions.to.txn.retry.backoff.max.ms": "0"},
		"transactional.id.expiration.ms":                              {"transactional.id.expiration.ms": "1000"},
		"auto.replica.balance.enable":                                 {"auto.replica.balance.enable": "true"},
		"replica.balance.check.interval.ms":                           {"replica.balance.check.interval.ms": "5000"},
		"replica.balance.max.concurrent.moves":                        {"replica.balance.max.concurrent.moves": "3"},
		"replica.balance.broker.unavailable.timeout.ms":               {"replica.balance.broker.unavailable.timeout.ms": "60000"},
		"replica.imbalance.per.broker.percentage":                     {"replica.imbalance.per.broker.percentage": "25"},
		"replica.balance.disk.imbalance.percentage":                   {"replica.balance.disk.imbalance.percentage": "20"},
		"replica.balance.disk.imbalance.min.bytes":                    {"replica.balance.disk.imbalance.min.bytes": "1024"},
		"replica.balance.max.disk.usage.percent":                      {"replica.balance.max.disk.usage.percent": "90"},
		"replica.balance.log.dirs.enable":                             {"replica.balance.log.dirs.enable": "false"},
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000"},
		"transaction.remove.expired.transaction.cleanup.interval.ms":  {"transaction.remove.expired.transaction.cleanup.interval.ms": "1000"},
		"controller.quorum.bootstrap.servers":                         {"controller.quorum.bootstrap.servers": "c1:9093,c2:9093"},
		"controller.quorum.standalone":                                {"controller.quorum.bootstrap.servers": "localhost:9093", "controller.quorum.standalone": "true"},
	}
	base, err := NewBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	typed := func(b *Broker) Broker {
		c := *b
		c.Raw, c.origins = nil, nil
		return c
	}
	for _, p := range Properties() {
		if p.Name == "" || p.Ignored {
			continue
		}
		if strings.HasPrefix(p.Name, "ssl.") || strings.HasPrefix(p.Name, "sasl.") || p.Name == reauthProperty {
			continue // TestTLSPropertiesReachListener, TestSASLListeners, TestReauthLifetimes
		}
		props, ok := changed[p.Name]
		if !ok {
			t.Errorf("%s: no test value; add one and make sure Broker exposes it", p.Name)
			continue
		}
		// The host name only matters to node.id.source; fixed so that no
		// case depends on the machine running the test.
		b, err := NewBroker(props, WithHostname("skein-4"))
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		if reflect.DeepEqual(typed(b), typed(base)) {
			t.Errorf("%s=%s changes nothing in Broker", p.Name, props[p.Name])
		}
	}
}

func TestAuthorizerClassName(t *testing.T) {
	for _, v := range []string{"", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer", SkeinAuthorizer} {
		b, err := NewBroker(map[string]string{"authorizer.class.name": v, "super.users": "User:admin"})
		if err != nil {
			t.Fatalf("%q refused: %v", v, err)
		}
		if want := map[bool]string{true: "", false: SkeinAuthorizer}[v == ""]; b.Authorizer != want {
			t.Fatalf("%q resolved to %q, want %q", v, b.Authorizer, want)
		}
	}
	_, err := NewBroker(map[string]string{"authorizer.class.name": "com.example.MyAuthorizer"})
	if err == nil || !strings.Contains(err.Error(), "com.example.MyAuthorizer") {
		t.Fatalf("another class accepted or unclear: %v", err)
	}
	if _, err := NewBroker(map[string]string{"super.users": "admin"}); err == nil {
		t.Fatal("super.users without a principal type accepted")
	}
}
