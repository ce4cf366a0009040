package wire

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxRequestElements bounds the array elements one request may carry over
// all its arrays (topics, partitions, ids...). kmsg decodes arrays eagerly
// and every handler builds an answer per element, so a frame of a million
// tiny elements (a Metadata request naming a million topic ids is 17 MB)
// would cost hundreds of MB to serve. Real clients stay far below: a
// follower fetching every partition a broker leads sends one element per
// partition, and this allows a quarter of a million.
const MaxRequestElements = 250_000

// ErrTooManyElements means a request's arrays hold more than
// MaxRequestElements elements in all.
var ErrTooManyElements = fmt.Errorf("request has more than %d array elements", MaxRequestElements)

// CheckElements counts the elements of every array in a decoded request
// (byte strings excepted) and fails with ErrTooManyElements past the
// bound. The walk stops as soon as the bound is passed.
func CheckElements(req kmsg.Request) error {
	n := 0
	if !countElements(reflect.ValueOf(req), &n) {
		return fmt.Errorf("%w: %s", ErrTooManyElements, kmsg.NameForKey(req.Key()))
	}
	return nil
}

var bytesType = reflect.TypeOf([]byte(nil))

func countElements(v reflect.Value, n *int) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return true
		}
		return countElements(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if !countElements(v.Field(i), n) {
				return false
			}
		}
	case reflect.Slice:
		if v.Type() == bytesType {
			return true
		}
		if *n += v.Len(); *n > MaxRequestElements {
			return false
		}
		if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Slice || k == reflect.Pointer {
			for i := range v.Len() {
				if !countElements(v.Index(i), n) {
					return false
				}
			}
		}
	}
	return true
}
