package config

import (
	"fmt"
	"strconv"
	"strings"
)

// maxFileBytes bounds a properties file; real ones are a few kilobytes.
const maxFileBytes = 1 << 20

// propertyLine is one key=value read from a properties file.
type propertyLine struct {
	Key, Value string
	Line       int // 1-based line where the entry starts
}

// parseProperties reads Java .properties syntax, as Kafka does: '#' or '!'
// starts a comment line; the key ends at the first unescaped '=', ':' or
// blank; a line ending in an odd number of backslashes continues on the next
// line (whose leading blanks are dropped); \t \n \r \f \uXXXX and \<char>
// escapes are decoded. Unlike Java, values are trimmed at the end too: a
// trailing blank is invisible in an editor and never meant.
func parseProperties(text string) ([]propertyLine, error) {
	if len(text) > maxFileBytes {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFileBytes)
	}
	lines := splitNaturalLines(text)
	var out []propertyLine
	for i := 0; i < len(lines); i++ {
		start := i
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for endsWithContinuation(line) {
			line = line[:len(line)-1]
			if i+1 >= len(lines) {
				break
			}
			i++
			line += strings.TrimLeft(lines[i], " \t\f")
		}
		rawKey, rawValue := splitKeyValue(line)
		key, err := unescape(rawKey)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start+1, err)
		}
		value, err := unescape(rawValue)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start+1, err)
		}
		out = append(out, propertyLine{Key: key, Value: strings.TrimSpace(value), Line: start + 1})
	}
	return out, nil
}

// splitNaturalLines splits on \n, \r\n and a lone \r, as Java does.
func splitNaturalLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// endsWithContinuation reports an odd number of trailing backslashes: an
// even number is escaped backslashes, not a continuation.
func endsWithContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitKeyValue separates the still-escaped key and value of a logical line.
func splitKeyValue(line string) (key, value string) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped character belongs to the key
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key = line[:end]
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \u escape`)
			}
			code, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \u escape %q`, s[i-1:i+5])
			}
			b.WriteRune(rune(code))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// ReadClientProperties reads a Kafka client properties file (the tools'
// --command-config): Java .properties syntax, a later key winning.
func ReadClientProperties(path string) (map[string]string, error) {
	text, err := readFileLimited(path)
	if err != nil {
		return nil, err
	}
	lines, err := parseProperties(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]string, len(lines))
	for _, l := range lines {
		out[l.Key] = l.Value
	}
	return out, nil
}
