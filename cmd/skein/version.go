package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	commands["version"] = command{summary: "print the version, commit and Go version of this binary", run: clientCommand(runVersion)}
}

func runVersion(_ context.Context, args []string, s streams) error {
	fs := newFlagSet("skein version", s)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	fmt.Fprint(s.out, versionText(bi))
	return nil
}

// versionText says what the Go toolchain stamped into the binary: the
// module version, the VCS commit it was built from (and whether the tree
// had changes), and the Go version. A binary built without build info
// (or outside a VCS checkout) says "unknown" where it lacks a fact.
func versionText(bi *debug.BuildInfo) string {
	version, commit, modified, built := "unknown", "unknown", false, ""
	goVersion := runtime.Version()
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				commit = kv.Value
			case "vcs.modified":
				modified = kv.Value == "true"
			case "vcs.time":
				built = kv.Value
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "skein %s\n", version)
	fmt.Fprintf(&b, "commit: %s", commit)
	if modified {
		b.WriteString(" (with uncommitted changes)")
	}
	if built != "" {
		fmt.Fprintf(&b, ", %s", built)
	}
	fmt.Fprintf(&b, "\ngo: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
