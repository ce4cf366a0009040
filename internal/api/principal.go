package api

// Principal is who sent a request, as Kafka's KafkaPrincipal: the
// authorizer matches ACLs against Type:Name (and the request's Host).
type Principal struct {
	Type string
	Name string
}

// PrincipalTypeUser is the type of every principal Skein authenticates.
const PrincipalTypeUser = "User"

// Anonymous is the principal of a connection that did not authenticate:
// a PLAINTEXT listener, or an SSL one without a client certificate.
var Anonymous = Principal{Type: PrincipalTypeUser, Name: "ANONYMOUS"}

// String is Kafka's Type:Name form, as super.users and ACLs write it.
func (p Principal) String() string { return p.Type + ":" + p.Name }

// SASLSession is the authentication of a connection on a SASL listener;
// nil on other listeners. Its answers may come later (a failed password
// is answered after connection.failed.authentication.delay.ms).
type SASLSession interface {
	Handshake(version int16, mechanism string, respond func(enabled []string, code int16))
	Authenticate(token []byte, respond func(code int16, message string, token []byte))
}
