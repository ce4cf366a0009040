package api

import "github.com/skein-log/skein/internal/sasl"

// scramMechanismOf maps the protocol's mechanism code (KIP-554: 1 is
// SCRAM-SHA-256, 2 SCRAM-SHA-512) to its name; "" for any other code.
func scramMechanismOf(code int8) string {
	switch code {
	case 1:
		return sasl.MechanismScramSHA256
	case 2:
		return sasl.MechanismScramSHA512
	}
	return ""
}

func scramMechanismCode(name string) int8 {
	switch name {
	case sasl.MechanismScramSHA256:
		return 1
	case sasl.MechanismScramSHA512:
		return 2
	}
	return 0
}
