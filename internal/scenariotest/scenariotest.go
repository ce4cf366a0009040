// Package scenariotest reads golden scenario files for the table tests of
// the pure cores (replication, replica, replicafetch): one command a line,
// '#' to the end of a line a comment. Each core's test keeps its own
// commands and its own way of saying that a line must fail; this package
// only finds the files and hands over their lines.
package scenariotest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files runs run as a subtest, named after the file, for every
// testdata/*.txt of the calling package; a package with none fails.
func Files(t *testing.T, run func(t *testing.T, file string)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario files in testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) { run(t, file) })
	}
}

// Lines calls step for every line of file that holds more than a comment,
// with the comment cut off and the surrounding space trimmed; raw is the
// line as written and no its number, for messages.
func Lines(t *testing.T, file string, step func(no int, line, raw string)) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for no := 1; sc.Scan(); no++ {
		raw := sc.Text()
		line := raw
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			step(no, line, raw)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
