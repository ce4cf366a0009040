package controller

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// QuotaOp is one AlterClientQuotas operation on an entity's quota key.
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// quotaKeyIsLong lists the client quota keys Skein enforces and whether
// each takes a whole number, as Kafka's quota config definitions do
// (byte rates are longs, request_percentage a double).
var quotaKeyIsLong = map[string]bool{
	metadata.QuotaProducerByteRate:  true,
	metadata.QuotaConsumerByteRate:  true,
	metadata.QuotaRequestPercentage: false,
}

// AlterClientQuota decides one AlterClientQuotas entry: it checks the
// entity and operations as Kafka's controller does (INVALID_REQUEST for an
// empty or repeated entity type, an unknown type or key, a repeated key, a
// value not above zero or not a whole number where one is required) and
// returns the ClientQuota records that make the change. Removing a value
// that is not set changes nothing.
func AlterClientQuota(im *metadata.Image, entity []metadata.QuotaEntityPart, ops []QuotaOp) ([]metadata.Record, error) {
	for _, p := range entity {
		if p.Type == "ip" {
			return nil, errorf(kerr.InvalidRequest, "ip quotas (connection_creation_rate) are not supported; use user or client-id")
		}
	}
	e, err := metadata.QuotaEntityOf(entity)
	if err != nil {
		return nil, &Error{Code: kerr.InvalidRequest, Detail: "invalid client quota entity", Cause: err}
	}
	current, _ := im.ClientQuota(e)
	seen := map[string]bool{}
	var recs []metadata.Record
	for _, op := range ops {
		if seen[op.Key] {
			return nil, errorf(kerr.InvalidRequest, "duplicate quota key %s", op.Key)
		}
		seen[op.Key] = true
		isLong, ok := quotaKeyIsLong[op.Key]
		if !ok {
			return nil, errorf(kerr.InvalidRequest, "invalid configuration key %s (valid: producer_byte_rate, consumer_byte_rate, request_percentage)", op.Key)
		}
		if op.Remove {
			if _, set := current[op.Key]; set {
				recs = append(recs, metadata.ClientQuota{Entity: e.Parts(), Key: op.Key, Remove: true})
			}
			continue
		}
		if math.IsNaN(op.Value) || math.IsInf(op.Value, 0) || op.Value <= 0 {
			return nil, errorf(kerr.InvalidRequest, "quota %s must be greater than 0", op.Key)
		}
		if isLong && (op.Value != math.Trunc(op.Value) || op.Value > math.MaxInt64) {
			return nil, errorf(kerr.InvalidRequest, "proposed value for %s is not a long integer: %v", op.Key, op.Value)
		}
		if v, set := current[op.Key]; set && v == op.Value {
			continue
		}
		recs = append(recs, metadata.ClientQuota{Entity: e.Parts(), Key: op.Key, Value: op.Value})
	}
	return recs, nil
}
