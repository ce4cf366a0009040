package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"
)

// maxManifestBytes bounds what the tests read: the files are a few KiB.
const maxManifestBytes = 1 << 20

// readFile reads a file of this directory.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if len(data) > maxManifestBytes {
		t.Fatalf("%s is %d bytes, more than the %d a manifest should need", path, len(data), maxManifestBytes)
	}
	return string(data)
}

// yamlDocuments splits a file into its YAML documents, failing on any
// syntax error.
func yamlDocuments(t *testing.T, path string) []*yaml.Node {
	t.Helper()
	return yamlDocumentsOf(t, path, []byte(readFile(t, path)))
}

// yamlDocumentsOf splits data, read from where, into its YAML documents.
func yamlDocumentsOf(t *testing.T, where string, data []byte) []*yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: document %d is not valid YAML: %v", where, len(docs)+1, err)
		}
		docs = append(docs, &doc)
	}
}

// decodeStrict decodes a document into out, refusing any field out does
// not declare. The structs in kubernetes_types_test.go spell Kubernetes'
// field names a second time, so a misspelt field (which the API server
// would drop or refuse) fails here.
func decodeStrict(doc *yaml.Node, out any) error {
	raw, err := yaml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("re-encoding document: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding %T: %w", out, err)
	}
	return nil
}

// intOrString is Kubernetes' IntOrString: a port number or a port name.
type intOrString struct {
	Number int
	Name   string
}

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a number or a name", n.Line)
	}
	if n.Tag == "!!int" {
		num, err := strconv.Atoi(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		v.Number = num
		return nil
	}
	v.Name = n.Value
	return nil
}

func (v intOrString) String() string {
	if v.Name != "" {
		return v.Name
	}
	return strconv.Itoa(v.Number)
}
