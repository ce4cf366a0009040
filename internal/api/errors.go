package api

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/producer"
)

// ErrorCode maps a domain error to the Kafka error code a client
// understands. Domain packages either return kerr errors directly or their
// own sentinels, which are translated here so the handlers stay uniform.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range codeMappers {
		if code, ok := m(err); ok {
			return code
		}
	}
	return kerr.UnknownServerError.Code
}

// ErrorMessage is the human text sent in the optional ErrorMessage fields.
func ErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// codeMappers translate sentinels from domain packages; each file that
// introduces a dependency on such a package adds its mapper.
var codeMappers []func(error) (int16, bool)

func init() {
	codeMappers = append(codeMappers,
		func(err error) (int16, bool) {
			var ce *controller.Error
			if errors.As(err, &ce) {
				return controller.ErrorCode(err), true
			}
			return 0, false
		},
		func(err error) (int16, bool) {
			if ke, ok := producer.KafkaError(err); ok {
				return ke.Code, true
			}
			var cfgErr *config.Error
			if errors.As(err, &cfgErr) {
				return kerr.InvalidConfig.Code, true
			}
			return 0, false
		},
	)
}
