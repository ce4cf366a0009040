package node

import (
	"os"
	"testing"
)

// TestProcessOpenFiles: the count follows the descriptors this process
// opens and closes, and the limit is the soft RLIMIT_NOFILE.
func TestProcessOpenFiles(t *testing.T) {
	before, limit, ok := processOpenFiles()
	if !ok || before <= 0 || limit < before {
		t.Fatalf("processOpenFiles() = %d, %d, %v", before, limit, ok)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	during, _, _ := processOpenFiles()
	f.Close()
	after, _, _ := processOpenFiles()
	if during != before+1 || after != before {
		t.Fatalf("open files %d, then %d with one more open, then %d closed again", before, during, after)
	}
}
