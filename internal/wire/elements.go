package wire

import (
	"fmt"
	"reflect"
	"sync"

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

// plans caches, per struct type, the fields that can hold arrays, so the
// walk visits only those and counts a slice of flat elements by its length
// alone: checking a fetch of thousands of partitions costs a few field
// visits, not one per partition field.
var plans sync.Map // reflect.Type -> []int

func planOf(t reflect.Type) []int {
	if p, ok := plans.Load(t); ok {
		return p.([]int)
	}
	var fields []int
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && holdsArrays(f.Type, map[reflect.Type]bool{}) {
			fields = append(fields, i)
		}
	}
	plans.Store(t, fields)
	return fields
}

var elemHolds sync.Map // reflect.Type -> bool

func elemHoldsArrays(t reflect.Type) bool {
	if h, ok := elemHolds.Load(t); ok {
		return h.(bool)
	}
	h := holdsArrays(t, map[reflect.Type]bool{})
	elemHolds.Store(t, h)
	return h
}

// holdsArrays reports whether a value of type t can contain a counted
// array (a slice other than a byte string).
func holdsArrays(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Slice:
		return t != bytesType
	case reflect.Pointer:
		return holdsArrays(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return false
		}
		seen[t] = true
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsArrays(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

func countElements(v reflect.Value, n *int) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return true
		}
		return countElements(v.Elem(), n)
	case reflect.Struct:
		for _, i := range planOf(v.Type()) {
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
		if elemHoldsArrays(v.Type().Elem()) {
			for i := range v.Len() {
				if !countElements(v.Index(i), n) {
					return false
				}
			}
		}
	}
	return true
}
