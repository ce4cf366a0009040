package metrics

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bounds on the generic search for an error code in a response, so an
// answer with a huge number of topics costs a bounded amount of work.
const (
	maxErrorSearchDepth = 4      // response -> topics -> partitions -> nested struct
	maxErrorSearchItems = 10_000 // structs visited
)

// ResponseErrorCode returns the error code that describes resp for
// metrics: its top-level ErrorCode if non-zero, else the first non-zero
// ErrorCode of its topics, partitions or other entries, else 0. A nil
// response (acks=0 produce) is 0.
//
// Produce and Fetch, the hot APIs, are read directly; every other response
// is searched by reflection, which needs no update when an API is added.
func ResponseErrorCode(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case nil:
		return 0
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for _, p := range r.Topics[i].Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		return 0
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if code := r.Topics[i].Partitions[j].ErrorCode; code != 0 {
					return code
				}
			}
		}
		return 0
	}
	v := reflect.ValueOf(resp)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0
	}
	budget := maxErrorSearchItems
	return searchErrorCode(v, maxErrorSearchDepth, &budget)
}

// searchErrorCode looks at v's own ErrorCode before descending into its
// slices of structs and struct fields, so a top-level code wins.
func searchErrorCode(v reflect.Value, depth int, budget *int) int16 {
	*budget--
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 && f.Int() != 0 {
		return int16(f.Int())
	}
	if depth == 0 {
		return 0
	}
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Struct:
			if *budget <= 0 {
				return 0
			}
			if code := searchErrorCode(f, depth-1, budget); code != 0 {
				return code
			}
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := range f.Len() {
				if *budget <= 0 {
					return 0
				}
				if code := searchErrorCode(f.Index(j), depth-1, budget); code != 0 {
					return code
				}
			}
		}
	}
	return 0
}
