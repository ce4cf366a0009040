package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
)

func init() {
	commands["group"] = command{summary: "list, describe, reset offsets of and delete consumer groups (like kafka-consumer-groups)", run: clientCommand(runGroup)}
}

const groupUsage = "usage: skein group list|describe|reset-offsets|delete [flags] [group...]"

func runGroup(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, groupUsage, map[string]clientRun{
		"list":          runGroupList,
		"describe":      runGroupDescribe,
		"reset-offsets": runGroupResetOffsets,
		"delete":        runGroupDelete,
	})
}

// addGroupFlags registers --bootstrap-server, --group and --timeout.
func addGroupFlags(fs *flag.FlagSet) adminFlags {
	return addAdminFlags(fs, "group", "consumer group id (groups may also be given as arguments)")
}

func runGroupList(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein group list", s)
	gf := addGroupFlags(fs)
	var states stringsFlag
	fs.Var(&states, "state", "list only groups in this state (repeatable): Empty, Stable, PreparingRebalance, CompletingRebalance, Dead")
	names, err := gf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("list takes no group names (got %q); use skein group describe <group>", names)
	}
	filter, err := groupStates(states)
	if err != nil {
		return err
	}
	adm, ctx, done, err := gf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	groups, err := adm.ListGroups(ctx, filter...)
	if err != nil {
		return fmt.Errorf("list groups: %w", explainError(err))
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL-TYPE")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, orDash(g.State), orDash(g.ProtocolType))
	}
	return tw.Flush()
}

func runGroupDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein group describe", s)
	gf := addGroupFlags(fs)
	all := fs.Bool("all-groups", false, "describe every group in the cluster")
	names, err := gf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 && !*all {
		return errors.New("name the groups to describe: skein group describe <group> [<group>], or --all-groups")
	}
	if len(names) > 0 && *all {
		return errors.New("give either group names or --all-groups, not both")
	}
	adm, ctx, done, err := gf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	if *all {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return fmt.Errorf("list groups: %w", explainError(err))
		}
		names = listed.Groups()
	}
	if len(names) == 0 {
		fmt.Fprintln(s.out, "There are no consumer groups.")
		return nil
	}
	lags, err := adm.Lag(ctx, names...)
	if err != nil {
		return fmt.Errorf("describe groups: %w", explainError(err))
	}
	var failed []error
	for i, name := range names {
		if i > 0 {
			fmt.Fprintln(s.out)
		}
		l, ok := lags[name]
		if !ok {
			failed = append(failed, fmt.Errorf("describe group %q: the cluster did not answer for it", name))
			continue
		}
		if err := printGroupDescription(s.out, l); err != nil {
			failed = append(failed, fmt.Errorf("describe group %q: %w", name, err))
		}
	}
	return errors.Join(failed...)
}

func runGroupDelete(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein group delete", s)
	gf := addGroupFlags(fs)
	names, err := gf.names(fs, args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("name the groups to delete: skein group delete <group> [<group>]")
	}
	adm, ctx, done, err := gf.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	resps, err := adm.DeleteGroups(ctx, names...)
	if err != nil {
		return fmt.Errorf("delete groups: %w", explainError(err))
	}
	var failed []error
	for _, name := range names {
		r, ok := resps[name]
		switch {
		case !ok:
			failed = append(failed, fmt.Errorf("delete group %q: the cluster did not answer for it", name))
		case errors.Is(r.Err, kerr.NonEmptyGroup):
			failed = append(failed, inWords(r.Err, "delete group %q: it still has members (NON_EMPTY_GROUP); stop its consumers first, or wait until their sessions expire", name))
		case r.Err != nil:
			failed = append(failed, fmt.Errorf("delete group %q: %w", name, withBrokerMessage(r.Err, r.ErrMessage)))
		default:
			fmt.Fprintf(s.out, "Deleted consumer group %s.\n", name)
		}
	}
	return errors.Join(failed...)
}

// groupStates checks --state values and spells them as Kafka does; the
// broker would silently match nothing for a misspelt state.
func groupStates(given []string) ([]string, error) {
	known := []string{groupStateEmpty, groupStateStable, groupStatePreparingRebalance, groupStateCompletingRebalance, groupStateDead}
	out := make([]string, 0, len(given))
	for _, g := range given {
		i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, g) })
		if i < 0 {
			return nil, fmt.Errorf("--state %q: want one of %s", g, strings.Join(known, ", "))
		}
		out = append(out, known[i])
	}
	return out, nil
}

// orDash is s, or "-" where there is nothing to show, as Kafka's tools
// fill empty cells.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
