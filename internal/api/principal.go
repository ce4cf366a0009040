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
