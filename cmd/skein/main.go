// Command skein is the one Skein binary: the broker (server), a local
// cluster for development (dev), and the client tools.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
)

// command is one subcommand of the binary.
type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "skein: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	// -h asked for the usage, which the flag set printed: not a failure.
	if err := cmd.run(os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "skein %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "Skein: a Kafka-compatible replicated commit log.")
	fmt.Fprintln(os.Stderr, "\nUsage: skein <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'skein <command> -h' for the flags of a command.")
}
