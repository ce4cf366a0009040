package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func init() {
	commands["user"] = command{summary: "create, list and delete SCRAM users (like kafka-configs --entity-type users)", run: clientCommand(runUser)}
}

const userUsage = "usage: skein user create|delete|list [flags]"

func runUser(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, userUsage, map[string]clientRun{
		"create": runUserCreate,
		"delete": runUserDelete,
		"list":   runUserList,
	})
}

type userFlags struct {
	bootstrap *clusterFlags
	timeout   *time.Duration
	name      *string
	mechanism *string
}

func addUserFlags(fs *flag.FlagSet) *userFlags {
	return &userFlags{
		bootstrap: clusterFlag(fs),
		timeout:   fs.Duration("timeout", adminTimeout, "give up on the cluster after this long"),
		name:      fs.String("name", "", "the user name"),
		mechanism: fs.String("mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512"),
	}
}

func (f *userFlags) parse(fs *flag.FlagSet, args []string, needName bool) (kadm.ScramMechanism, error) {
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 0, err
	}
	if len(rest) > 0 {
		return 0, fmt.Errorf("unexpected arguments %q: name the user with --name", rest)
	}
	if needName && *f.name == "" {
		return 0, errors.New("--name is required")
	}
	switch strings.ToUpper(*f.mechanism) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", *f.mechanism)
}

func (f *userFlags) admin(ctx context.Context) (*kadm.Client, context.Context, context.CancelFunc, error) {
	cl, err := newClient(f.bootstrap)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	return kadm.NewClient(cl), ctx, func() { cancel(); cl.Close() }, nil
}

func runUserCreate(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein user create", s)
	f := addUserFlags(fs)
	iterations := fs.Int("iterations", 8192, "SCRAM iterations (4096 to 16384)")
	password := fs.String("password", "", "the password (visible to other local users in the process list: prefer --password-file)")
	passwordFile := fs.String("password-file", "", "file holding the password (one trailing newline is ignored)")
	mech, err := f.parse(fs, args, true)
	if err != nil {
		return err
	}
	pw := *password
	switch {
	case pw != "" && *passwordFile != "":
		return errors.New("give --password or --password-file, not both")
	case *passwordFile != "":
		b, err := os.ReadFile(*passwordFile)
		if err != nil {
			return fmt.Errorf("--password-file: %w", err)
		}
		pw = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	if pw == "" {
		return errors.New("a non-empty --password or --password-file is required")
	}
	adm, ctx, done, err := f.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	// kadm salts and hashes the password here: only the salted password
	// travels to the cluster, and only derived keys are stored.
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: *f.name, Mechanism: mech,
		Iterations: int32(*iterations), Password: pw}})
	if err != nil {
		return fmt.Errorf("create user %s: %w", *f.name, err)
	}
	if r := res[*f.name]; r.Err != nil {
		return fmt.Errorf("create user %s: %w%s", *f.name, r.Err, detail(&r.ErrMessage))
	}
	fmt.Fprintf(s.out, "Set %s credential for user %s (%d iterations)\n", mech, *f.name, *iterations)
	return nil
}

func runUserDelete(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein user delete", s)
	f := addUserFlags(fs)
	mech, err := f.parse(fs, args, true)
	if err != nil {
		return err
	}
	adm, ctx, done, err := f.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: *f.name, Mechanism: mech}}, nil)
	if err != nil {
		return fmt.Errorf("delete user %s: %w", *f.name, err)
	}
	if r := res[*f.name]; r.Err != nil {
		return fmt.Errorf("delete user %s: %w%s", *f.name, r.Err, detail(&r.ErrMessage))
	}
	fmt.Fprintf(s.out, "Deleted %s credential of user %s\n", mech, *f.name)
	return nil
}

func runUserList(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein user list", s)
	f := addUserFlags(fs)
	if _, err := f.parse(fs, args, false); err != nil {
		return err
	}
	adm, ctx, done, err := f.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	var users []string
	if *f.name != "" {
		users = []string{*f.name}
	}
	described, err := adm.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return fmt.Errorf("list users: %w", err)
	}
	var failed error
	for _, d := range described.Sorted() {
		if d.Err != nil {
			failed = errors.Join(failed, fmt.Errorf("user %s: %w%s", d.User, d.Err, detail(&d.ErrMessage)))
			continue
		}
		var creds []string
		for _, c := range d.CredInfos {
			creds = append(creds, fmt.Sprintf("%s=iterations=%d", c.Mechanism, c.Iterations))
		}
		// kafka-configs --describe --entity-type users prints this line.
		fmt.Fprintf(s.out, "SCRAM credential configs for user-principal '%s' are %s\n", d.User, strings.Join(creds, ", "))
	}
	return failed
}
