package replica

import (
	"errors"
	"reflect"
	"testing"
)

// TestReadyEmpty sets each field of a Ready in turn: Empty must see every
// one, so a field added to Ready and forgotten in Empty fails here rather
// than being skipped by a wrapper.
func TestReadyEmpty(t *testing.T) {
	if rd := (Ready{}); !rd.Empty() {
		t.Fatal("the zero Ready is not empty")
	}
	typ := reflect.TypeOf(Ready{})
	for i := range typ.NumField() {
		var rd Ready
		f := reflect.ValueOf(&rd).Elem().Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Interface:
			f.Set(reflect.ValueOf(errors.New("x")))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", typ.Field(i).Name, f.Kind())
		}
		if rd.Empty() {
			t.Errorf("a Ready with only %s set is empty", typ.Field(i).Name)
		}
	}
}
