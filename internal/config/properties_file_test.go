package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []propertyLine
	}{
		{"equals", "a=1", []propertyLine{{"a", "1", 1}}},
		{"colon", "a: 1", []propertyLine{{"a", "1", 1}}},
		{"blank separator", "a 1", []propertyLine{{"a", "1", 1}}},
		{"spaces around equals", "  a  =  1  ", []propertyLine{{"a", "1", 1}}},
		{"hash and bang comments", "# c\n! c\n  # indented\na=1", []propertyLine{{"a", "1", 4}}},
		{"blank lines", "\n\n \t\na=1\n\n", []propertyLine{{"a", "1", 4}}},
		{"key only", "a", []propertyLine{{"a", "", 1}}},
		{"empty value", "a=", []propertyLine{{"a", "", 1}}},
		{"value keeps later equals", "a=b=c:d", []propertyLine{{"a", "b=c:d", 1}}},
		{"value keeps inner hash", "a=x#y", []propertyLine{{"a", "x#y", 1}}},
		{"CRLF", "a=1\r\nb=2\r\n", []propertyLine{{"a", "1", 1}, {"b", "2", 2}}},
		{"lone CR", "a=1\rb=2", []propertyLine{{"a", "1", 1}, {"b", "2", 2}}},
		{"continuation", "a=1,\\\n    2,\\\n  3\nb=4", []propertyLine{{"a", "1,2,3", 1}, {"b", "4", 4}}},
		{"continuation at end of file", "a=1\\", []propertyLine{{"a", "1", 1}}},
		{"escaped backslash is not continuation", "a=c:\\\\\nb=2", []propertyLine{{"a", `c:\`, 1}, {"b", "2", 2}}},
		{"comment does not continue", "# x \\\na=1", []propertyLine{{"a", "1", 2}}},
		{"escaped separator in key", `a\=b=c`, []propertyLine{{"a=b", "c", 1}}},
		{"escapes", `a=t\tn\nu\u0041x\qy`, []propertyLine{{"a", "t\tn\nuAxqy", 1}}},
		{"last duplicate wins later", "a=1\na=2", []propertyLine{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties(tt.text)
			if err != nil {
				t.Fatalf("parseProperties: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct {
		name, text, wantErr string
	}{
		{"short unicode escape", "a=\\u00", `line 1: malformed \u escape`},
		{"bad unicode escape", "\n\na=\\uZZZZ", `line 3: malformed \u escape`},
		{"too large", strings.Repeat("#", maxFileBytes+1), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseProperties(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=1\nb: 2\\\n 3\n# c\n")
	f.Add(`k\u0041=\t`)
	f.Fuzz(func(t *testing.T, text string) {
		lines, err := parseProperties(text)
		if err != nil {
			return
		}
		for _, l := range lines {
			if l.Line < 1 {
				t.Fatalf("line number %d", l.Line)
			}
		}
	})
}
