#!/bin/bash
# A secured 3-node Skein cluster on 127.0.0.1 for running other projects'
# suites over TLS and SCRAM (docs/compatibility.md). Every node is broker and
# controller:
#
#   SSL (mutual TLS) client listener         29092, 29192, 29292
#   CONTROLLER, SSL (mutual TLS)             +1
#   admin HTTP (/metrics, /readyz)           +2
#   SASL_PLAINTEXT (SCRAM) client listener   +3
#   INTERNAL inter-broker, SASL_SSL          +4  (sasl.mechanism.inter.broker.protocol: $3, PLAIN by default)
#
# The StandardAuthorizer is on; the certificates' principals (User:skein-node,
# User:kgo) and the SCRAM users broker and kgoscram are super users.
# Certificates come from a throwaway CA made with openssl in DIR/certs.
#
# usage: scripts/secure-compat-cluster.sh SKEIN_BINARY DIR [PLAIN|SCRAM-SHA-256|SCRAM-SHA-512]
# stop:  kill $(cat DIR/node-*.pid)
set -euo pipefail
bin=$(realpath "$1"); dir=$(realpath -m "$2"); mech=${3:-PLAIN}
certs=$dir/certs
mkdir -p "$certs"
if [ ! -f "$certs/kgo.pem" ]; then
  (
    cd "$certs"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 7 -subj /CN=skein-compat-ca 2>/dev/null
    for n in skein-node kgo; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $n.key -out $n.csr -subj /CN=$n 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > $n.ext
      openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.crt -days 7 -extfile $n.ext 2>/dev/null
      openssl pkcs8 -topk8 -nocrypt -in $n.key -out $n.pk8
      cat $n.pk8 $n.crt > $n.pem   # Kafka's PEM key store: key, then chain
    done
  )
fi
voters=1@127.0.0.1:29093,2@127.0.0.1:29193,3@127.0.0.1:29293
login=""
if [ "$mech" != PLAIN ]; then
  # Kafka's listener- and mechanism-scoped login entry.
  login="listener.name.internal.$(echo "$mech" | tr A-Z a-z).sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\" password=\"broker-secret\";"
fi
for i in 1 2 3; do
  p=$((29092 + 100*(i-1)))
  cat > "$dir/node-$i.properties" <<P
node.id=$i
process.roles=broker,controller
cluster.id=skein-secure-compat
controller.quorum.voters=$voters
listeners=SSL://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p+1)),SASL_PLAINTEXT://127.0.0.1:$((p+3)),INTERNAL://127.0.0.1:$((p+4))
listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_SSL
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
admin.listeners=http://127.0.0.1:$((p+2))
log.dirs=$dir/broker-$i
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
auto.create.topics.enable=true
ssl.keystore.type=PEM
ssl.keystore.location=$certs/skein-node.pem
ssl.truststore.type=PEM
ssl.truststore.location=$certs/ca.pem
ssl.client.auth=required
listener.name.internal.ssl.client.auth=none
ssl.principal.mapping.rules=RULE:^CN=([^,]*)\$/\$1/,DEFAULT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=$mech
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";
$login
# KIP-368 on the nodes' own connections: they renew their login in place.
listener.name.internal.connections.max.reauth.ms=30000
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:skein-node;User:kgo;User:broker;User:kgoscram
allow.everyone.if.no.acl.found=false
P
  "$bin" server --config "$dir/node-$i.properties" >> "$dir/node-$i.log" 2>&1 &
  echo $! > "$dir/node-$i.pid"
done
cat > "$dir/kgo-tls.properties" <<P
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$certs/ca.pem
ssl.keystore.type=PEM
ssl.keystore.location=$certs/kgo.pem
P
# The SCRAM users, through the mutual-TLS listener as User:kgo (the
# controller quorum and the SSL listener need no SCRAM user to come up).
printf 'kgoscram-pw' > "$dir/kgoscram.pw"; printf 'broker-secret' > "$dir/broker.pw"
up=""
for try in $(seq 1 100); do
  if "$bin" cluster describe -b 127.0.0.1:29092 --command-config "$dir/kgo-tls.properties" --timeout 2s >/dev/null 2>&1; then up=1; break; fi
  sleep 0.2
done
[ -n "$up" ] || { echo "the cluster did not come up; see $dir/node-*.log" >&2; exit 1; }
for m in SCRAM-SHA-256 SCRAM-SHA-512; do
  "$bin" user create -b 127.0.0.1:29092 --command-config "$dir/kgo-tls.properties" --name kgoscram --mechanism $m --password-file "$dir/kgoscram.pw"
  "$bin" user create -b 127.0.0.1:29092 --command-config "$dir/kgo-tls.properties" --name broker --mechanism $m --password-file "$dir/broker.pw"
done
cat <<E
export KGO_SEEDS=127.0.0.1:29092,127.0.0.1:29192,127.0.0.1:29292
export KGO_TEST_TLS=ca:$certs/ca.pem,cert:$certs/kgo.pem,key:$certs/kgo.pem
export KGO_TEST_SCRAM=kgoscram:kgoscram-pw
export KGO_TEST_SCRAM_SEEDS=127.0.0.1:29095,127.0.0.1:29195,127.0.0.1:29295
E
