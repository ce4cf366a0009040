#!/bin/sh
# Makes what deploy/docker-compose.secure.yml mounts and deploy/kubernetes-secure's
# Secret holds, in deploy/secure/generated
# (ignored by git): a throwaway CA, one certificate the three brokers share
# (CN=skein-node, for broker-1..3, localhost and 127.0.0.1; key and chain in
# one PEM file, Kafka's PEM key store), the client properties the nodes'
# certificate logs in with, and the password of the SCRAM user admin.
# Run it once, from anywhere; it keeps what exists.
set -eu
out=$(dirname "$0")/generated
mkdir -p "$out"
cd "$out"
if [ ! -f node.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca-key.pem -out ca.pem \
    -days 365 -subj "/CN=skein compose CA" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout node.key -out node.csr -subj /CN=skein-node 2>/dev/null
  # SKEIN_CERT_HOSTS adds names, e.g. for deploy/kubernetes-secure in namespace NS:
  #   SKEIN_CERT_HOSTS='DNS:*.skein-headless.NS.svc,DNS:skein.NS.svc'
  printf 'subjectAltName=DNS:broker-1,DNS:broker-2,DNS:broker-3,DNS:localhost,IP:127.0.0.1%s\nextendedKeyUsage=serverAuth,clientAuth\n' \
    "${SKEIN_CERT_HOSTS:+,$SKEIN_CERT_HOSTS}" > node.ext
  openssl x509 -req -in node.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out node.crt -days 365 -extfile node.ext 2>/dev/null
  openssl pkcs8 -topk8 -nocrypt -in node.key -out node.pk8
  cat node.pk8 node.crt > node.pem
  rm -f node.key node.pk8 node.csr node.ext ca.srl
  # The containers read these as root; the CA key stays on the host.
  chmod 644 node.pem ca.pem
  chmod 600 ca-key.pem
fi
cat > node.properties <<P
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=/etc/skein/tls/ca.pem
ssl.keystore.type=PEM
ssl.keystore.location=/etc/skein/tls/node.pem
P
if [ ! -f admin.password ]; then
  openssl rand -hex 16 | tr -d '\n' > admin.password
fi
cat > admin.properties <<P
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(cat admin.password)";
ssl.truststore.type=PEM
ssl.truststore.location=$(pwd)/ca.pem
P
chmod 600 admin.properties
echo "client properties for admin (a super user), from the host: $(pwd)/admin.properties"
