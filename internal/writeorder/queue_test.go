package writeorder

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestOutcomesAppliedInWriteOrder(t *testing.T) {
	var q Queue[string]
	for i, w := range []string{"a", "b", "c"} {
		q.Add(uint64(i+1), w)
	}
	var got []string
	apply := func(w string, err error) { got = append(got, fmt.Sprintf("%s:%v", w, err)) }
	q.Report(3, nil, apply)
	q.Report(2, errors.New("lost"), apply)
	if len(got) != 0 {
		t.Fatalf("applied %v before the first write's outcome", got)
	}
	q.Report(1, nil, apply)
	if want := []string{"a:<nil>", "b:lost", "c:<nil>"}; !slices.Equal(got, want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
}
