package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
)

// kcat drives librdkafka (2.0.2 in Debian's kcat 1.7.1). It produces lines
// "key<TAB>value" to one partition per run, with headers fixed per run, and
// consumes with a JSON envelope per record.

// kcatMaxOutput bounds what one kcat run may print (a runaway consumer
// must not eat the test's memory).
const kcatMaxOutput = 64 << 20

func kcatProduce(ctx context.Context, kcat, addr string, rs *recordSet, codec string) error {
	for p, recs := range rs.byPartition {
		if len(recs) == 0 {
			continue
		}
		args := []string{"-P", "-b", addr, "-t", rs.topic, "-p", strconv.Itoa(p), "-K", `\t`,
			"-X", "acks=all", "-X", "compression.codec=" + codec, "-X", "linger.ms=5"}
		// kcat sends the same headers with every record of one run; the
		// record set for kcat has only per-partition headers.
		for _, h := range recs[0].Headers {
			args = append(args, "-H", h.Key+"="+string(h.Value))
		}
		var in bytes.Buffer
		for _, r := range recs {
			fmt.Fprintf(&in, "%s\t%s\n", r.Key, r.Value)
		}
		cmd := exec.CommandContext(ctx, kcat, args...)
		cmd.Stdin = &in
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kcat -P partition %d: %w\n%s", p, err, out)
		}
		// kcat reports failed deliveries on stderr but may still exit 0;
		// against a healthy local broker it prints no errors at all.
		if bytes.Contains(out, []byte("ERROR")) {
			return fmt.Errorf("kcat -P partition %d reported errors:\n%s", p, out)
		}
	}
	return nil
}

// kcatEnvelope is kcat's -J output for one record.
type kcatEnvelope struct {
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Key       *string         `json:"key"`
	Payload   *string         `json:"payload"`
	Headers   json.RawMessage `json:"headers"`
}

func kcatConsume(ctx context.Context, kcat, addr, topic string, counts []int) ([][]testRecord, error) {
	got := make([][]testRecord, len(counts))
	for p, want := range counts {
		// -e stops at the partition end, so a short log fails fast
		// instead of hanging; -c stops at the expected count.
		cmd := exec.CommandContext(ctx, kcat, "-C", "-b", addr, "-t", topic, "-p", strconv.Itoa(p),
			"-o", "beginning", "-c", strconv.Itoa(want), "-e", "-J", "-q")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return got, fmt.Errorf("kcat -C pipe: %w", err)
		}
		if err := cmd.Start(); err != nil {
			return got, fmt.Errorf("kcat -C start: %w", err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), kcatMaxOutput)
		var parseErr error
		for sc.Scan() && parseErr == nil {
			var env kcatEnvelope
			if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
				parseErr = fmt.Errorf("kcat output %q: %w", sc.Text(), err)
				break
			}
			tr := testRecord{Partition: env.Partition, Offset: env.Offset}
			if env.Key != nil {
				tr.Key = []byte(*env.Key)
			}
			if env.Payload != nil {
				tr.Value = []byte(*env.Payload)
			}
			tr.Headers, parseErr = parseKcatHeaders(env.Headers)
			got[p] = append(got[p], tr)
		}
		waitErr := cmd.Wait()
		if parseErr != nil {
			return got, parseErr
		}
		if waitErr != nil {
			return got, fmt.Errorf("kcat -C partition %d: %w\n%s", p, waitErr, stderr.String())
		}
		if len(got[p]) != want {
			return got, fmt.Errorf("kcat -C partition %d: read %d of %d\n%s", p, len(got[p]), want, stderr.String())
		}
	}
	return got, nil
}

// parseKcatHeaders reads kcat's headers in the order they were printed:
// kcat 1.7 prints a flat array [name, value, name, value, ...]; its help
// text documents an object, which is accepted too (keys in order).
func parseKcatHeaders(raw json.RawMessage) ([]testHeader, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("kcat headers %s: %w", raw, err)
	}
	var strs []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("kcat headers %s: %w", raw, err)
		}
		s, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("kcat headers %s: unexpected token %v", raw, tok)
		}
		strs = append(strs, s)
	}
	if len(strs)%2 != 0 || (open != json.Delim('[') && open != json.Delim('{')) {
		return nil, fmt.Errorf("kcat headers %s: not name/value pairs", raw)
	}
	hs := make([]testHeader, 0, len(strs)/2)
	for i := 0; i < len(strs); i += 2 {
		hs = append(hs, testHeader{Key: strs[i], Value: []byte(strs[i+1])})
	}
	return hs, nil
}
