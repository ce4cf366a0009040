package api

import "time"

// SASLSession is the authentication of a connection on a SASL listener;
// nil on other listeners. Its answers may come later (a failed password
// is answered after connection.failed.authentication.delay.ms).
type SASLSession interface {
	Handshake(version int16, mechanism string, respond func(enabled []string, code int16))
	// Authenticate serves one SaslAuthenticate of the given version;
	// lifetime is its session_lifetime_ms once the exchange succeeded
	// (0: the session does not expire, KIP-368).
	Authenticate(version int16, token []byte, respond func(code int16, message string, token []byte, lifetime time.Duration))
}
