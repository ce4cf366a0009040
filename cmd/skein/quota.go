package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	commands["quota"] = command{summary: "describe and alter client quotas of users and client ids (like kafka-configs)", run: clientCommand(runQuota)}
}

const quotaUsage = "usage: skein quota describe|alter [--entity-type users|clients (--entity-name NAME | --entity-default)]... [--add-config k=v,...] [--delete-config k,...]"

func runQuota(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, quotaUsage, map[string]clientRun{
		"describe": runQuotaDescribe,
		"alter":    runQuotaAlter,
	})
}

// quotaEntityFlags collects kafka-configs' entity flags in order: each
// --entity-type starts a component, and the --entity-name or
// --entity-default after it names it.
type quotaEntityFlags struct {
	parts []quotaPart
}

type quotaPart struct {
	typ     string
	name    *string
	named   bool // --entity-name or --entity-default given
	defname bool
}

func (q *quotaEntityFlags) register(fs *flag.FlagSet) {
	fs.Func("entity-type", "users or clients (user and client-id also work); repeat for a user and client-id pair", func(v string) error {
		typ, err := quotaEntityType(v)
		if err != nil {
			return err
		}
		for _, p := range q.parts {
			if p.typ == typ {
				return fmt.Errorf("--entity-type %s given twice", v)
			}
		}
		q.parts = append(q.parts, quotaPart{typ: typ})
		return nil
	})
	fs.Func("entity-name", "name of the entity of the --entity-type before it", func(v string) error {
		return q.name(&v)
	})
	fs.BoolFunc("entity-default", "the default entity of the --entity-type before it (kafka-configs' <default>)", func(string) error {
		return q.name(nil)
	})
}

func (q *quotaEntityFlags) name(n *string) error {
	if len(q.parts) == 0 {
		return errors.New("give --entity-type before --entity-name or --entity-default")
	}
	last := &q.parts[len(q.parts)-1]
	if last.named {
		return fmt.Errorf("the %s entity is already named", last.typ)
	}
	last.named, last.name, last.defname = true, n, n == nil
	return nil
}

func quotaEntityType(v string) (string, error) {
	switch v {
	case "users", "user":
		return "user", nil
	case "clients", "client-id", "client":
		return "client-id", nil
	}
	return "", fmt.Errorf("entity type %q: want users or clients", v)
}

// entity returns the named entity for alter: every component named.
func (q *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	if len(q.parts) == 0 {
		return nil, errors.New("name the entity: --entity-type users|clients --entity-name NAME (or --entity-default)")
	}
	var e kadm.ClientQuotaEntity
	for _, p := range q.parts {
		if !p.named {
			return nil, fmt.Errorf("the %s entity needs --entity-name NAME or --entity-default", p.typ)
		}
		e = append(e, kadm.ClientQuotaEntityComponent{Type: p.typ, Name: p.name})
	}
	return e, nil
}

func runQuotaDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein quota describe", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	var ef quotaEntityFlags
	ef.register(fs)
	if rest, err := parseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q; %s", rest, quotaUsage)
	}
	// As kafka-configs --describe: an entity type without a name lists
	// every entity of exactly that shape; no entity flags, every quota.
	var comps []kadm.DescribeClientQuotaComponent
	for _, p := range ef.parts {
		c := kadm.DescribeClientQuotaComponent{Type: p.typ, MatchType: 2}
		switch {
		case p.defname:
			c.MatchType = 1
		case p.named:
			c.MatchType, c.MatchName = 0, p.name
		}
		comps = append(comps, c)
	}
	adm, ctx, done, err := adminFlags{bootstrap: bootstrap, timeout: timeout}.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	described, err := adm.DescribeClientQuotas(ctx, len(comps) > 0, comps)
	if err != nil {
		return fmt.Errorf("describe client quotas: %w", explainError(err))
	}
	printQuotas(s.out, described)
	return nil
}

func printQuotas(out io.Writer, described kadm.DescribedClientQuotas) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tCLIENT-ID\tQUOTA\tVALUE")
	for _, q := range described {
		user, client := "-", "-"
		for _, c := range q.Entity {
			n := "<default>"
			if c.Name != nil {
				n = *c.Name
			}
			if c.Type == "user" {
				user = n
			} else if c.Type == "client-id" {
				client = n
			}
		}
		for _, v := range q.Values {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", user, client, v.Key, strconv.FormatFloat(v.Value, 'f', -1, 64))
		}
	}
	tw.Flush()
}

func runQuotaAlter(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein quota alter", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	var ef quotaEntityFlags
	ef.register(fs)
	var ops []kadm.AlterClientQuotaOp
	fs.Func("add-config", "quotas to set, key=value[,key=value...]: producer_byte_rate, consumer_byte_rate (bytes/s), request_percentage", func(v string) error {
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("want key=value, got %q", kv)
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return fmt.Errorf("%s=%s: not a number", k, val)
			}
			ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(k), Value: f})
		}
		return nil
	})
	fs.Func("delete-config", "quotas to remove, key[,key...]", func(v string) error {
		for _, k := range strings.Split(v, ",") {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: strings.TrimSpace(k), Remove: true})
		}
		return nil
	})
	validateOnly := fs.Bool("validate-only", false, "check the change without making it")
	if rest, err := parseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q; %s", rest, quotaUsage)
	}
	entity, err := ef.entity()
	if err != nil {
		return err
	}
	if len(ops) == 0 {
		return errors.New("nothing to change: give --add-config key=value or --delete-config key")
	}
	adm, ctx, done, err := adminFlags{bootstrap: bootstrap, timeout: timeout}.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	entries := []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}}
	alter := adm.AlterClientQuotas
	if *validateOnly {
		alter = adm.ValidateAlterClientQuotas
	}
	res, err := alter(ctx, entries)
	if err != nil {
		return fmt.Errorf("alter client quotas: %w", explainError(err))
	}
	for _, r := range res {
		if r.Err != nil {
			msg := r.ErrMessage
			if msg == "" {
				msg = r.Err.Error()
			}
			return fmt.Errorf("alter client quotas of %s: %s", r.Entity, msg)
		}
	}
	verb := "Altered"
	if *validateOnly {
		verb = "Validated"
	}
	fmt.Fprintf(s.out, "%s client quotas of %s.\n", verb, entity)
	return nil
}
