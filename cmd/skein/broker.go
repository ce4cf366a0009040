package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/skein-log/skein/internal/reassignplan"
)

func init() {
	commands["broker"] = command{summary: "move every replica off a broker (decommission)", run: clientCommand(runBroker)}
}

func runBroker(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein broker decommission --broker N [--execute] [flags]", map[string]clientRun{
		"decommission": runDecommission,
	})
}

// runDecommission plans moving every replica off a broker (each replaced,
// in its place, by the least loaded live broker not already in the
// partition) and, with --execute, starts it; `skein partitions reassign
// --verify` with the printed plan shows the progress. The broker stays
// registered (UnregisterBroker is not served).
func runDecommission(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein broker decommission", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	broker := fs.Int("broker", -1, "the broker id to empty")
	execute := fs.Bool("execute", false, "start the reassignments (without it, only print the plan)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *broker < 0 {
		return errors.New("--broker N is required")
	}
	gone := int32(*broker)
	adm, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", explainError(err))
	}
	var live []int32
	for _, b := range md.Brokers {
		if b.NodeID != gone {
			live = append(live, b.NodeID)
		}
	}
	names := md.Topics.Names()
	slices.Sort(names)
	current, err := currentAssignment(ctx, adm, names)
	if err != nil {
		return err
	}
	plan, err := reassignplan.Decommission(current, gone, live)
	if err != nil {
		return err
	}
	if len(plan) == 0 {
		fmt.Fprintf(s.out, "Broker %d holds no replica.\n", gone)
		return nil
	}
	fmt.Fprintf(s.out, "Moving %d replicas off broker %d\n%s\n\n", len(plan), gone, reassignplan.Format(plan))
	if !*execute {
		fmt.Fprintln(s.out, "Nothing changed: run again with --execute, or save the plan for skein partitions reassign --execute --plan FILE.")
		return nil
	}
	if err := reassignExecute(ctx, adm, s.out, reassignplan.Plan{Version: 1, Partitions: plan}, -1); err != nil {
		return err
	}
	fmt.Fprintln(s.out, "Save the plan above and follow it with skein partitions reassign --verify --plan FILE.")
	return nil
}
