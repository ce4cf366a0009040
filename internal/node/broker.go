// Package node is the broker runtime: listeners, connections, goroutines,
// timers, group-committed fsyncs, delayed produces and fetches. It is the
// only package that wires the others together; the decisions it applies
// come from the pure packages.
package node

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/admin"
	"github.com/skein-log/skein/internal/api"
	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/connlimit"
	"github.com/skein-log/skein/internal/loglevel"
	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/metrics"
	"github.com/skein-log/skein/internal/quorum"
	"github.com/skein-log/skein/internal/storage"
	"github.com/skein-log/skein/internal/tlsconf"
	"github.com/skein-log/skein/internal/vfs"
)

// Options are the runtime's seams.
type Options struct {
	FS vfs.FS // defaults to the OS filesystem
	// Logger's handler receives the lines the node's log levels enable
	// (log.level, and the broker-logger levels set at runtime); its own
	// level is not consulted. Defaults to slog.Default().
	Logger *slog.Logger
	// MetadataSnapshotEvery, if set, snapshots the metadata log every so
	// many entries and keeps a tenth of that behind the snapshot (tests
	// use it to make brokers catch up from a snapshot); 0 keeps the
	// quorum's defaults.
	MetadataSnapshotEvery uint64
	// JWKSRootCAs are the CAs an https:// sasl.oauthbearer.jwks.endpoint.url
	// is trusted by; nil: the system's.
	JWKSRootCAs *x509.CertPool
	// AuthClock, if set, is the clock connections' SASL sessions are
	// judged by: when a login (and its connections.max.reauth.ms lifetime,
	// KIP-368, or its OAUTHBEARER token) starts and ends. Tests advance it
	// to carry a session past its lifetime without waiting; nil is the
	// wall clock.
	AuthClock func() time.Time
	// OpenFiles, if set, reports the descriptors the process has open and
	// its soft open-files limit in place of /proc/self/fd and
	// RLIMIT_NOFILE (ok false: not known). Tests give a broker a small
	// limit this way without lowering the process's own.
	OpenFiles func() (open, limit int, ok bool)
}

type partKey struct {
	topic metadata.TopicID
	index int32
}

// Broker is one running Skein broker. Its state is grouped by concern in
// the embedded structs below (their fields are used as the Broker's own).
type Broker struct {
	cfg  *config.Broker
	opts Options
	fs   vfs.FS
	log  *slog.Logger
	api  *api.Server
	// levels are the levels of log and of the named loggers
	// (loggers.go), which broker-logger alters change.
	levels *loglevel.Levels
	named  map[string]*slog.Logger

	reg     *prometheus.Registry
	metrics *metrics.Metrics
	admins  []*admin.Server

	// serving is set once logs are recovered and listeners accept.
	serving atomic.Bool
	// fatal carries why the node stopped by itself (diskfail.go).
	fatal chan error
	stop  chan struct{}
	// stopCtx ends with stop, for waits that take a context.
	stopCtx    context.Context
	stopCancel context.CancelFunc
	bgWG       sync.WaitGroup
	stopOnce   sync.Once

	brokerConns
	brokerPartitions
	brokerMetadata
	brokerController
	// groups hosts the group coordinators of the __consumer_offsets
	// partitions this broker leads.
	groups *groupRuntime
	// txns hosts the transaction coordinators of the __transaction_state
	// partitions this broker leads.
	txns *txnRuntime
	// jwks keeps the OAUTHBEARER key set current; nil without OAUTHBEARER.
	jwks *jwksSource
	brokerMaintenance
}

// brokerConns is the client side: listeners, connections and the budgets
// requests are admitted against.
type brokerConns struct {
	lnMu      sync.Mutex
	listeners map[string]net.Listener
	// tlsServers holds the TLS configuration of each TLS listener.
	tlsServers map[string]*tlsconf.Server
	conns      map[net.Conn]struct{}
	connWG     sync.WaitGroup
	// limits decides on each accepted connection (guarded by lnMu);
	// refusals logs those refused at a bounded rate.
	limits   *connlimit.Limiter
	refusals refusalLog
	// draining is set before drainConns moves the read deadlines into the
	// past, so a reader that re-arms its idle deadline afterwards sees it.
	draining atomic.Bool
	// requestBytes and requestCount are queued.max.request.bytes and
	// queued.max.requests; fetchBytes is fetch.response.max.inflight.bytes.
	requestBytes *budget
	requestCount *budget
	fetchBytes   *budget
}

// brokerPartitions is the replicas this broker holds and what keeps them
// in step: the group-commit flusher, the replica fetchers and the Fetch
// handler's sessions.
type brokerPartitions struct {
	partsMu sync.RWMutex
	parts   map[partKey]*partition
	// closedForFiles is the replicas assigned here that a reconcile left
	// closed for the open-files limit (fdlimit.go), answered with
	// KAFKA_STORAGE_ERROR until one opens them or the metadata moves them
	// away; under partsMu, changed only by the reconcile goroutine.
	closedForFiles map[partKey]struct{}

	flusher  *flusher
	fetchers *fetcherManager
	// pageCache bounds the partitions' page cache together
	// (log.page.cache.broker.bytes, pagecache.go); nil without a bound.
	pageCache *pageCacheBudget
	// throttle is the replication quota (KIP-73) of leader and follower.
	throttle *replicationThrottle
	// suspects are brokers whose replication connection just broke
	// (id -> time.Time until which they are reported unavailable).
	suspects sync.Map
	// fenceTimes is when this node's image first showed each broker
	// fenced (api.FenceTimes), under fenceMu: the quorum goroutine writes
	// it as it installs images, Metadata handlers read it.
	fenceMu    sync.Mutex
	fenceTimes api.FenceTimes
	// fetchSessions is the KIP-227 session cache of the Fetch handler.
	fetchSessions *fetchSessions
}

// brokerMetadata is the metadata quorum, what this node knows of it, and
// the image applied and reconciled.
type brokerMetadata struct {
	quorum *quorum.Node
	// voters are the controllers' endpoints (controllerVoters): fixed by
	// controller.quorum.voters, or a dynamic quorum's latest membership.
	voters atomic.Pointer[[]config.Voter]
	// selfUpdating: an UpdateRaftVoter of this controller's is in flight
	// (sendSelfUpdate).
	selfUpdating atomic.Bool
	// observedDynamic: the quorum's membership is the log's, as this
	// node saw it (a static quorum upgraded to kraft.version 1).
	observedDynamic atomic.Bool
	// metadataObservers are the broker-only nodes fetching the metadata
	// log from this controller (DescribeQuorum).
	metadataObservers observerTable
	emptyImage        *metadata.Image
	controllerID      atomic.Int32 // the active controller, -1 if unknown
	// foreign records peers of another cluster (cluster_id.go).
	foreign foreignCluster

	image  atomic.Pointer[metadata.Image]
	quotas brokerQuotas // client quota accounting (conn_quota.go)
	// metadataSnapshotsLoaded counts snapshots a broker-only node loaded.
	metadataSnapshotsLoaded atomic.Int64
	// imageCond signals image versions applied and reconciled.
	imageCond  *sync.Cond
	reconciled int64 // guarded by imageCond.L
	// reconciledVersion is reconciled, readable without the lock.
	reconciledVersion atomic.Int64
	reconcileCh       chan struct{}
	// reconciledImage is the image reconcilePartitions last brought the
	// replicas in line with; only the reconcile goroutine uses it.
	reconciledImage metadata.Reconciled
	// isr batches the ISR changes of the partitions led here (isr.go).
	isr isrSender
	// metadataWaits counts requests held for the image to catch up
	// (metadata_wait.go).
	metadataWaits waitCount
}

// brokerController is the active controller's runtime (when this node is
// it) and this broker's session with the controller: registration,
// heartbeats, controlled shutdown, producer id blocks.
type brokerController struct {
	controllerSvc *controllerService
	ctrl          *controllerClient
	// ctrlISR carries the AlterPartition requests and ctrlForward the
	// forwarded admin requests and producer id blocks, each on its own
	// connection: a controller
	// answers a connection's requests in order, so a CreateTopics of
	// thousands of partitions (answered once committed) would otherwise
	// hold up the ISR changes and the heartbeats behind it.
	ctrlISR, ctrlForward *controllerClient
	// controllerChanged wakes the session loop when the controller
	// changes (or a heartbeat is wanted now).
	controllerChanged chan struct{}

	incarnation [16]byte
	brokerEpoch atomic.Int64 // -1 until registered
	// strayCheckedEpoch is the registration whose reconcile last looked
	// for partition directories to delete (removeStrayPartitionDirs).
	strayCheckedEpoch atomic.Int64
	// logDirIDs are the directory ids of cfg.LogDirs, in order.
	logDirIDs []metadata.DirectoryID
	// previousCleanEpoch is the broker epoch up to which this broker's
	// logs are known to have lost nothing (see shutdownStateFile): the
	// previous process's (set in Start); the session loop's
	// ctrlcore.BrokerSession starts from it and keeps the latest.
	previousCleanEpoch int64
	bootID             string // the kernel boot this process runs in
	registered         chan struct{}
	registeredOnce     sync.Once
	shuttingDown       atomic.Bool
	shutdownOK         chan struct{}
	shutdownOnce       sync.Once
	// shutdownUnreachable ends a controlled shutdown no controller
	// answers; shutdownFailingSince is only touched by the session loop.
	shutdownUnreachable     chan struct{}
	shutdownUnreachableOnce sync.Once
	shutdownFailingSince    time.Time

	pidMu   sync.Mutex
	pidNext int64 // next id of this broker's block
	pidEnd  int64
}

// brokerMaintenance is the logs' upkeep besides serving: compaction and
// the health of the log directories.
type brokerMaintenance struct {
	cleaner *logCleaner // compaction of cleanup.policy=compact partitions
	// logMoves are the replica moves between log directories under way
	// (AlterReplicaLogDirs; log_moves.go).
	logMoves *logMoves
	// openFiles is processOpenFiles; tests replace it to bring the
	// open-files limit near (fdlimit.go).
	openFiles openFilesFunc
	// fdCount is the last count of openFiles, for the reconcile
	// goroutine only (openFilesEstimate).
	fdCount fdCount

	// ownFS is set when the broker runs on the OS's filesystem of its
	// own choosing (Options.FS nil): then its fdatasyncs may go through
	// fsyncRing (log.fsync.io.uring.enable, fsync_ring.go).
	ownFS     bool
	fsyncRing *vfs.FsyncRing

	// offlineDir is the log directory that failed (nil while all are
	// healthy; diskfail.go).
	offlineDir atomic.Pointer[string]
	// spaceReadings holds each log directory's last free-space reading
	// (*dirSpace, diskspace.go).
	spaceReadings   sync.Map
	handoverMu      sync.Mutex
	handoverClosed  bool // guarded by handoverMu
	handoverAnswers sync.WaitGroup
}

// New prepares a broker from its configuration; Start opens the logs and
// starts serving.
func New(cfg *config.Broker, opts Options) *Broker {
	ownFS := opts.FS == nil
	if ownFS {
		opts.FS = vfs.OS{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.AuthClock == nil {
		opts.AuthClock = time.Now
	}
	levels, log, named := newLoggers(opts.Logger, cfg.LogLevel, cfg.NodeID)
	b := &Broker{
		log:    log,
		levels: levels,
		named:  named,
		cfg:    cfg,
		opts:   opts,
		fs:     opts.FS,
		stop:   make(chan struct{}),
		fatal:  make(chan error, 1),
		brokerConns: brokerConns{
			listeners: map[string]net.Listener{},
			conns:     map[net.Conn]struct{}{},
			limits:    connlimit.New(connLimits(cfg)),
		},
		brokerPartitions: brokerPartitions{
			parts:     map[partKey]*partition{},
			pageCache: newPageCacheBudget(cfg.LogPageCacheBrokerBytes, cfg.LogPageCacheWindowBytes),
		},
		brokerMetadata: brokerMetadata{
			imageCond:   newImageCond(),
			reconcileCh: make(chan struct{}, 1),
		},
		brokerController: brokerController{
			controllerChanged:   make(chan struct{}, 1),
			registered:          make(chan struct{}),
			shutdownOK:          make(chan struct{}),
			shutdownUnreachable: make(chan struct{}),
		},
	}
	b.ownFS = ownFS
	b.stopCtx, b.stopCancel = context.WithCancel(context.Background())
	b.controllerID.Store(-1)
	b.brokerEpoch.Store(-1)
	b.strayCheckedEpoch.Store(-1)
	rand.Read(b.incarnation[:])
	b.requestBytes = newBudget(cfg.QueuedMaxRequestBytes)
	b.requestCount = newBudget(int64(cfg.QueuedMaxRequests))
	b.fetchBytes = newBudget(cfg.FetchResponseMaxInflightBytes)
	b.controllerSvc = newControllerService(b)
	b.ctrl = &controllerClient{b: b}
	b.ctrlISR = &controllerClient{b: b}
	b.ctrlForward = &controllerClient{b: b}
	b.fetchers = newFetcherManager(b)
	b.throttle = newReplicationThrottle(cfg)
	b.groups = newGroupRuntime(b)
	b.txns = newTxnRuntime(b)
	b.cleaner = newLogCleaner(b)
	b.logMoves = newLogMoves()
	b.openFiles = processOpenFiles
	if opts.OpenFiles != nil {
		b.openFiles = opts.OpenFiles
	}
	b.fetchSessions = newFetchSessions(cfg.FetchSessionCacheSlots)
	b.api = &api.Server{Backend: backend{b}, Log: b.logger(loggerAPI)}
	b.reg = metrics.NewRegistry()
	return b
}

// Registry is the broker's Prometheus registry.
func (b *Broker) Registry() *prometheus.Registry { return b.reg }

// Start recovers the logs, registers the broker and opens the listeners.
func (b *Broker) Start() (err error) {
	if len(b.cfg.LogDirs) == 0 {
		return errors.New("no log.dirs configured")
	}
	// Before anything that reads b.fs runs on another goroutine.
	b.openFsyncRing()
	defer func() {
		if err != nil && b.flusher == nil {
			// Failed before storage started: nothing else closes it.
			b.closeFsyncRing()
		}
	}()
	m, err := metrics.New(b.reg, metrics.Options{})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	b.metrics = m
	b.api.OnDenied = func(rt authz.ResourceType) { m.AuthorizationDenied(rt.String()) }
	if err := b.metrics.RegisterClusterView(clusterView{b}); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := b.metrics.RegisterBudgets(metrics.Budgets{RequestBytes: b.requestBytes.inUse, FetchResponseBytes: b.fetchBytes.inUse}); err != nil {
		return err
	}
	if err := b.registerLogDirSpace(); err != nil {
		return err
	}
	if err := b.metrics.RegisterReplicationThrottle(func() metrics.ReplicationThrottle { return b.throttle.stats(b.Image()) }); err != nil {
		return err
	}
	if err := b.metrics.RegisterLogDirMoves(func() metrics.LogDirMoves {
		return b.logMoves.stats(config.AlterLogDirsRate(b.cfg, b.Image()))
	}); err != nil {
		return err
	}
	// The admin listener comes up first so /readyz can say "starting"
	// while logs recover.
	if err := b.startAdmin(); err != nil {
		return err
	}
	for _, d := range b.cfg.LogDirs {
		// Durably: the metadata quorum writes in the first at once,
		// and a power cut must not take the directory back.
		if err := vfs.MkdirAllDurably(b.fs, d); err != nil {
			return fmt.Errorf("create log dir %s: %w", d, err)
		}
	}
	clusterID, err := b.loadOrCreateMetaProperties()
	if err != nil {
		return err
	}
	if err := b.takeShutdownState(); err != nil {
		return err
	}
	// Before any partition opens: a move a crash interrupted is
	// finished (its swap was decided) or its future log kept and the
	// move resumed once the partition is open (maybeResumeLogMove).
	resume, err := storage.RecoverMoves(b.fs, b.cfg.LogDirs, storage.Options{Logger: b.logger(loggerPartition)})
	if err != nil {
		return err
	}
	for name, mv := range resume {
		b.logMoves.preferred[name] = mv.Root
		b.logMoves.kept[name] = mv.Future
	}
	isBroker, isController := b.cfg.HasRole(config.RoleBroker), b.cfg.HasRole(config.RoleController)
	if (len(b.cfg.ControllerQuorumVoters) > 1 || len(b.cfg.ControllerQuorumBootstrapServers) > 0) && b.cfg.ClusterID == "" {
		return errors.New("cluster.id must be set when controller.quorum.voters lists more than one controller or the quorum is dynamic: every node must agree on it")
	}
	if !isController && b.cfg.ClusterID == "" {
		return errors.New("cluster.id must be set on a broker-only node: it must agree with the controllers'")
	}
	b.flusher = newFlusher()
	if err := b.loadTLS(); err != nil {
		b.shutdownStorage()
		return err
	}
	// Keys before listeners: an OAUTHBEARER login is never refused for
	// want of a JWKS that was only slow to read.
	jwksErr := b.loadOAuth()
	if err := b.listen(); err != nil {
		b.shutdownStorage()
		return err
	}
	// Controllers vote in the metadata quorum; broker-only nodes follow
	// its committed log without voting.
	if isController {
		if err := b.startQuorum(clusterID); err != nil {
			b.closeListeners()
			b.shutdownStorage()
			return err
		}
		b.bgWG.Add(1)
		go b.watchMetadataLog()
	} else {
		b.startMetadataObserver(clusterID)
	}
	// Controller listeners serve at once (the quorum needs them); client
	// listeners only once this broker has registered and its image holds
	// the registration, so no client is served from a stale replay (and
	// no partition takes a role from one: metadata.Image.ReplicaRole).
	for name, ln := range b.listeners {
		if b.isControllerListener(name) {
			go b.accept(name, ln)
			continue
		}
		go func() {
			select {
			case <-b.registered:
				b.accept(name, ln)
			case <-b.stop:
			}
		}()
	}
	// Every node applies the image (the active controller waits for its
	// own reconcile after each commit); only brokers hold a session and
	// partitions, only controllers run the controller's loop.
	b.bgWG.Add(1)
	go b.reconcileLoop()
	if isBroker {
		b.bgWG.Add(1)
		go b.sessionLoop()
	}
	if isController {
		b.bgWG.Add(1)
		go b.controllerSvc.loop()
	}
	b.startMaintenance()
	if b.pageCache != nil {
		b.bgWG.Add(1)
		go func() {
			defer b.bgWG.Done()
			b.pageCache.run(b.stop, b.metrics.AddPageCacheDropped)
		}()
	}
	b.runOAuth(jwksErr)
	b.cleaner.start()
	b.serving.Store(true)
	b.log.Info("broker started", "cluster", clusterID, "listeners", b.describeListeners())
	warnSharedInterBrokerListener(b.cfg, b.log)
	warnPlaintextClusterListeners(b.cfg, b.log)
	// A quorum of one elects itself at once (aloneInQuorum): wait for the registration so
	// the broker is usable when Start returns, as a single broker always
	// was. In a cluster the others may not be up yet; readiness says when.
	if b.aloneInQuorum() && isBroker {
		select {
		case <-b.registered:
		case <-time.After(30 * time.Second):
			b.log.Warn("not registered 30 s after start")
		}
		if err := b.waitReconciled(context.Background(), b.Image().Version()); err != nil {
			return err
		}
	}
	return nil
}

// Registered is closed once this broker first registered with the
// controller and its image holds the registration; on a controller-only
// node, once it first knows the active controller.
func (b *Broker) Registered() <-chan struct{} { return b.registered }

// ControllerID is the active controller as this node knows it (-1: none).
func (b *Broker) ControllerID() int32 { return b.controllerID.Load() }

// Addr is the bound address of a listener (useful with port 0).
func (b *Broker) Addr(listener string) string {
	b.lnMu.Lock()
	defer b.lnMu.Unlock()
	if ln, ok := b.listeners[listener]; ok {
		return ln.Addr().String()
	}
	return ""
}

// Halt stops the broker the way a crash would, for tests: no controlled
// shutdown, no clean close of the logs (the next start recovers them),
// sockets dropped mid-request.
func (b *Broker) Halt() {
	b.stopOnce.Do(b.haltOnce)
}

// haltOnce is Halt's body; it runs under stopOnce.
func (b *Broker) haltOnce() {
	close(b.stop)
	b.stopCancel()
	b.groups.stopAll()
	b.txns.stopAll()
	b.fetchers.stopAll()
	if b.quorum != nil {
		b.quorum.Halt() // no handover: a crash hands nothing over
	}
	b.closeListeners()
	b.connWG.Wait()
	b.bgWG.Wait()
	// After the session loop ended, so it cannot redial.
	b.closeControllerClients()
	if b.flusher != nil {
		b.flusher.stop()
	}
	b.closeFsyncRing()
	for _, a := range b.admins {
		a.Close()
	}
	b.log.Info("broker halted")
}

// Close stops serving and closes every log cleanly.
func (b *Broker) Close() error {
	var err error
	b.stopOnce.Do(func() { err = b.closeOnce() })
	return err
}

// closeOnce is Close's body; it runs under stopOnce.
func (b *Broker) closeOnce() error {
	b.controlledShutdown(controlledShutdownTimeout)
	b.waitHandoverAnswers()
	// Refuse new client connections before anything stops: a client
	// retries a refused connection, but takes a connection closed
	// before its first answer for a misconfiguration and gives up.
	b.closeClientListeners()
	close(b.stop)
	b.stopCancel()
	b.groups.stopAll()
	b.txns.stopAll()
	b.fetchers.stopAll()
	if b.quorum != nil {
		// After the controlled shutdown, before the controller listener
		// closes (drainConns): an active controller hands the quorum's
		// leadership over (quorum.Node.Stop), and its successor's
		// election and first message must still reach it.
		b.quorum.Stop()
	}
	b.drainConns()
	b.bgWG.Wait()
	b.closeControllerClients()
	err := b.shutdownStorage()
	if epoch := b.brokerEpoch.Load(); err == nil && epoch >= 0 {
		err = b.writeShutdownState(shutdownState{Epoch: epoch, BootID: b.bootID, Clean: true})
	}
	for _, a := range b.admins {
		a.Close()
	}
	b.log.Info("broker stopped")
	return err
}

func (b *Broker) shutdownStorage() error {
	var errs []error
	b.partsMu.Lock()
	parts := b.parts
	b.parts = map[partKey]*partition{}
	b.partsMu.Unlock()
	if b.flusher != nil {
		b.flusher.stop()
	}
	// In parallel: each close waits mostly for its fsyncs, and one after
	// another thousands of partitions took a minute to stop.
	start := time.Now()
	b.log.Info("closing logs", "partitions", len(parts))
	defer func() { b.log.Info("logs closed", "partitions", len(parts), "took", time.Since(start)) }()
	var mu sync.Mutex
	forEachParallel(slices.Collect(maps.Values(parts)), maxParallelOpens, func(p *partition) {
		if err := p.closeLeavingDirSync(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("close %s: %w", p.name(), err))
			mu.Unlock()
		}
	})
	// The clean-shutdown markers, one per log, become durable here at
	// once: one directory fsync each took seconds for thousands of logs.
	for _, dir := range b.cfg.LogDirs {
		if d := b.offlineDir.Load(); d != nil && *d == dir {
			continue // a failed disk is not written to
		}
		if err := b.fs.SyncFS(dir); err != nil {
			errs = append(errs, fmt.Errorf("sync the filesystem of %s: %w", dir, err))
		}
	}
	// Every log is closed: a file synced after this (none should be)
	// calls fdatasync itself.
	b.closeFsyncRing()
	return errors.Join(errs...)
}

// loadOrCreateMetaProperties checks every log dir's meta.properties
// against this broker's node id and returns the cluster id, creating the
// files on first start. Each directory keeps the directory id (KIP-858)
// it got when it was first formatted; b.logDirIDs holds them, and a new
// id tells the controller that the directory was replaced.
func (b *Broker) loadOrCreateMetaProperties() (string, error) {
	clusterID := b.cfg.ClusterID
	b.logDirIDs = make([]metadata.DirectoryID, len(b.cfg.LogDirs))
	for i, dir := range b.cfg.LogDirs {
		path := filepath.Join(dir, "meta.properties")
		data, err := vfs.ReadFile(b.fs, path)
		if err != nil {
			continue
		}
		props := parseSimpleProperties(string(data))
		if id := props["node.id"]; id != strconv.Itoa(int(b.cfg.NodeID)) {
			return "", fmt.Errorf("%s belongs to node.id %s, this broker is node.id %d", path, id, b.cfg.NodeID)
		}
		stored := props["cluster.id"]
		if clusterID != "" && stored != "" && stored != clusterID {
			return "", fmt.Errorf("%s belongs to cluster %s, configured cluster.id is %s", path, stored, clusterID)
		}
		if stored != "" {
			clusterID = stored
		}
		// A file from before directory ids (or a damaged id) gets a new
		// one: the controller judges only between two known sets.
		if id, err := metadata.ParseTopicID(props["directory.id"]); err == nil && !id.IsZero() && !slices.Contains(b.logDirIDs[:i], id) {
			b.logDirIDs[i] = id
		}
	}
	if clusterID == "" {
		var id metadata.TopicID
		rand.Read(id[:])
		clusterID = id.String()
	}
	for i, dir := range b.cfg.LogDirs {
		for b.logDirIDs[i].IsZero() {
			rand.Read(b.logDirIDs[i][:])
		}
		content := fmt.Sprintf("# written by skein; do not edit\nversion=1\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\n", clusterID, b.cfg.NodeID, b.logDirIDs[i])
		if err := vfs.WriteFileAtomic(b.fs, dir, filepath.Join(dir, "meta.properties"), []byte(content)); err != nil {
			return "", fmt.Errorf("write meta.properties in %s: %w", dir, err)
		}
	}
	return clusterID, nil
}

// advertised is what clients are told to connect to: advertised.listeners,
// else the listeners with their bound ports (port 0 resolved).
func (b *Broker) advertised() []config.Listener {
	out := make([]config.Listener, 0, len(b.cfg.Listeners))
	adv := map[string]config.Listener{}
	for _, l := range b.cfg.AdvertisedListeners {
		adv[l.Name] = l
	}
	for _, l := range b.cfg.Listeners {
		if b.isControllerListener(l.Name) {
			continue
		}
		if a, ok := adv[l.Name]; ok {
			l = a
		}
		// Fill in what the bound socket knows: the port chosen for port 0,
		// and a concrete host for a wildcard bind.
		if addr := b.Addr(l.Name); addr != "" && (l.Port == 0 || isWildcardHost(l.Host)) {
			host, port, err := net.SplitHostPort(addr)
			if err == nil {
				if l.Port == 0 {
					l.Port, _ = strconv.Atoi(port)
				}
				if isWildcardHost(l.Host) {
					l.Host = host
				}
			}
		}
		out = append(out, l)
	}
	return out
}

func isWildcardHost(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }

func (b *Broker) isControllerListener(name string) bool {
	for _, n := range b.cfg.ControllerListenerNames {
		if n == name {
			return true
		}
	}
	return false
}

// Image is the current metadata image.
func (b *Broker) Image() *metadata.Image { return b.image.Load() }

func newTopicID() metadata.TopicID {
	for {
		var id metadata.TopicID
		rand.Read(id[:])
		if !id.IsZero() {
			return id
		}
	}
}

// allocateProducerID hands out an id from this broker's block, asking
// the controller for a new block (committed before it is used, so no id
// is ever handed out twice in the cluster) when it runs out.
func (b *Broker) allocateProducerID() (int64, error) {
	b.pidMu.Lock()
	defer b.pidMu.Unlock()
	if b.pidNext < b.pidEnd {
		id := b.pidNext
		b.pidNext++
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerRPCTimeout)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID = b.cfg.NodeID
	req.BrokerEpoch = b.brokerEpoch.Load()
	// On the forwarding connection, as Kafka's broker sends it: the
	// controller answers once the new block is committed, and a
	// heartbeat queued behind it on the session connection would wait
	// out that commit.
	resp, err := b.ctrlForward.request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, err
	}
	b.pidNext, b.pidEnd = r.ProducerIDStart+1, r.ProducerIDStart+int64(r.ProducerIDLen)
	return r.ProducerIDStart, nil
}

func (b *Broker) topicConfig(t *metadata.Topic) (config.TopicConfig, error) {
	return config.ResolveTopic(b.cfg, t.Configs)
}

// partition returns the local partition if this broker leads it.
func (b *Broker) partition(id metadata.TopicID, index int32) *partition {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	return b.parts[partKey{id, index}]
}

// fetchPartitions resolves every partition of a fetch into parts (nil
// for one not here) under one read lock: an idle follower's fetch names
// thousands, and each lock of partsMu is an atomic add on a line every
// connection's fetches share.
func (b *Broker) fetchPartitions(fps []api.FetchPartition, parts []*partition) {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	for i, fp := range fps {
		parts[i] = b.parts[partKey{fp.Topic, fp.Partition}]
	}
}

// partitionError explains why a partition is not served here. A replica
// left closed for the open-files limit is offline, as Kafka's replica in
// an offline log directory is: KAFKA_STORAGE_ERROR, which a client takes
// for a partition to look up again rather than a leader that moved; any
// other (one not opened yet, a follower) is NOT_LEADER_OR_FOLLOWER.
func (b *Broker) partitionError(id metadata.TopicID, index int32) error {
	t, ok := b.Image().TopicByID(id)
	if !ok || index < 0 || int(index) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition
	}
	if b.closedForOpenFiles(partKey{id, index}) {
		return fmt.Errorf("%w: %s-%d is closed on this broker for %w", kerr.KafkaStorageError, t.Name, index, errOpenFilesLimit)
	}
	return kerr.NotLeaderForPartition
}

func (b *Broker) describeListeners() []string {
	var out []string
	for _, l := range b.advertised() {
		out = append(out, l.String())
	}
	return out
}

// parseSimpleProperties reads the key=value lines of meta.properties,
// which this broker writes itself (no escapes, no continuations).
func parseSimpleProperties(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// startMaintenance runs retention, time-based rolls and producer-state
// expiry on a ticker.
func (b *Broker) startMaintenance() {
	interval := b.cfg.LogRetentionCheckInterval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	b.bgWG.Add(1)
	go func() {
		defer b.bgWG.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		// ISR shrinks are decided on a tick of half replica.lag.time.max.ms
		// (at most a second), as Kafka's isr-expiration task does.
		repl := time.NewTicker(min(max(b.cfg.ReplicaLagTimeMax/2, 10*time.Millisecond), time.Second))
		defer repl.Stop()
		for {
			select {
			case <-b.stop:
				return
			case now := <-t.C:
				b.maintain(now)
			case now := <-repl.C:
				for _, p := range b.partitionList() {
					p.tick(now)
				}
			}
		}
	}()
}

func (b *Broker) partitionList() []*partition {
	b.partsMu.RLock()
	defer b.partsMu.RUnlock()
	parts := make([]*partition, 0, len(b.parts))
	for _, p := range b.parts {
		parts = append(parts, p)
	}
	return parts
}

func (b *Broker) enforceRetention(p *partition, now time.Time) {
	if n, err := p.log.EnforceRetention(now.UnixMilli()); err != nil {
		b.log.Warn("retention failed", "partition", p.name(), "err", err)
	} else if n > 0 {
		b.log.Info("retention deleted segments", "partition", p.name(), "segments", n, "log_start_offset", p.log.LogStartOffset())
	}
}

func (b *Broker) maintain(now time.Time) {
	for _, p := range b.partitionList() {
		if err := p.log.MaybeRoll(now.UnixMilli()); err != nil {
			b.log.Warn("segment roll failed", "partition", p.name(), "err", err)
		}
		deletes := p.topicConfig().Delete()
		// With cleanup.policy=compact alone retention never deletes:
		// compaction keeps the latest record of every key, as in Kafka.
		if deletes {
			b.enforceRetention(p, now)
		}
		p.expireProducers(now.UnixMilli(), b.cfg.ProducerIDExpiration.Milliseconds())
	}
}
