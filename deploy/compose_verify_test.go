package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bounds of the Compose verify run.
const (
	composeVerifyDuration = 30 * time.Second
	composeVerifySeed     = 187 // schedules a pause, both partitions and a kill within the 30 s
	composeVerifyTimeout  = 6 * time.Minute
)

// TestVerifyComposeCluster runs `skein verify --compose` against the
// Compose cluster: idempotent acks=all producers and consumers while the
// brokers' containers are killed, paused and disconnected from their
// network, then the Jepsen-style check must find the history VALID.
func TestVerifyComposeCluster(t *testing.T) {
	if os.Getenv(composeLiveEnv) != "1" {
		t.Skip("live docker compose test; set " + composeLiveEnv + "=1 to run it (needs Docker, builds " + composeImage + ")")
	}
	command := composeCommand()
	if command == nil {
		t.Fatal("neither docker compose nor docker-compose is installed")
	}
	brokers := liveBrokers(t)
	buildImage(t)
	bin := filepath.Join(t.TempDir(), "skein")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/skein").CombinedOutput(); err != nil {
		t.Fatalf("build skein: %v\n%s", err, out)
	}

	project := composeProject{command: command, name: fmt.Sprintf("skeinverify%d", os.Getpid())}
	t.Cleanup(func() { tearDown(t, project) })
	ctx, cancel := context.WithTimeout(context.Background(), composeVerifyTimeout)
	defer cancel()
	if _, err := project.run(ctx, "up", "-d"); err != nil {
		t.Fatalf("starting the cluster (are the published ports free?): %v", err)
	}
	var seeds []string
	for _, b := range brokers {
		waitReady(ctx, t, b)
		seeds = append(seeds, b.kafka)
	}
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "verify", "--bootstrap-server", strings.Join(seeds, ","), "--compose", project.name,
		"--nemesis", "kill,pause,partition-leader,partition-controller", "--duration", composeVerifyDuration.String(),
		"--seed", fmt.Sprint(composeVerifySeed), "--rate", "50", "--out", out)
	output, err := cmd.CombinedOutput()
	t.Logf("skein verify:\n%s", output)
	if err != nil {
		t.Fatalf("skein verify against the Compose cluster: %v", err)
	}
	for _, want := range []string{"VALID: 0 anomalies", "nemesis: docker "} {
		if !strings.Contains(string(output), want) {
			t.Fatalf("no %q in the output", want)
		}
	}
}
