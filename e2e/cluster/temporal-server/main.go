// Command temporal-server runs a Temporal server on PostgreSQL the way a cluster runs one: a process
// of its own, the server's postgres12_pgx persistence and SQL visibility, the schema set up by the
// server's SQL tool (temporal-sql-tool: create-database, setup-schema, update-schema from the schema
// embedded in the server module). The cluster test (package e2e/cluster) builds and starts it; it is
// not part of Lucy, and Lucy's own binary never links it.
//
//	temporal-server -pg 127.0.0.1:5432 -pg-user postgres -ports 7233,7234,7235,7236 [-setup] [-shards 4]
//
// The four ports are the frontend's, history's, matching's and the internal worker's. It runs until
// SIGTERM or SIGINT.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // the postgres12 and postgres12_pgx plugins
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
	sqltool "go.temporal.io/server/tools/sql"
)

const (
	// plugin is the server's PostgreSQL plugin on the pgx driver, as deploy/compose runs it (DB), not
	// postgres12 on lib/pq: pgx prepares each statement once per connection and sends it in one round
	// trip, where lib/pq has PostgreSQL parse and plan every statement again, in two. Measured with
	// BenchmarkClusterTurnOverhead: 15.4 ms a turn on postgres12, 11.3 on postgres12_pgx.
	plugin         = "postgres12_pgx"
	clusterName    = "active"
	persistenceDB  = "temporal"
	visibilityDB   = "temporal_visibility"
	schemaPrefix   = "postgresql/v12/" // in the server module's embedded schema (go.temporal.io/server/schema)
	defaultStore   = "default"
	visibilityName = "visibility"
)

func main() {
	pg := flag.String("pg", "127.0.0.1:5432", "PostgreSQL host:port")
	pgUser := flag.String("pg-user", "postgres", "PostgreSQL user (trust authentication)")
	portList := flag.String("ports", "7233,7234,7235,7236", "ports of the frontend, history, matching and worker services")
	shards := flag.Int("shards", 4, "history shards (fixed for the life of the database)")
	setup := flag.Bool("setup", false, "create the databases and set up their schemas first (temporal-sql-tool)")
	level := flag.String("log-level", "warn", "server log level")
	dynFile := flag.String("dynamic-config", "", "a dynamic configuration file (deploy/compose/dynamicconfig.yaml), on top of the defaults")
	flag.Parse()
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: *level, Format: "console"}))

	host, port, err := net.SplitHostPort(*pg)
	if err != nil {
		fail("-pg: %v", err)
	}
	if *setup {
		for _, db := range []struct{ name, schema string }{{persistenceDB, "temporal"}, {visibilityDB, "visibility"}} {
			base := []string{"temporal-sql-tool", "--ep", host, "-p", port, "-u", *pgUser, "--pl", plugin, "--db", db.name}
			for _, cmd := range [][]string{
				{"create-database"},
				{"setup-schema", "-v", "0.0"},
				{"update-schema", "-s", schemaPrefix + db.schema},
			} {
				// The tool exits the process with status 1 on a failure, after logging it.
				if err := sqltool.RunTool(append(append([]string{}, base...), cmd...)); err != nil {
					fail("temporal-sql-tool %s on %s: %v", cmd[0], db.name, err)
				}
			}
		}
	}

	ports := map[primitives.ServiceName]int{}
	names := []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService, primitives.MatchingService, primitives.WorkerService}
	fields := strings.Split(*portList, ",")
	if len(fields) != len(names) {
		fail("-ports: want %d ports, got %q", len(names), *portList)
	}
	for i, f := range fields {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fail("-ports: %v", err)
		}
		ports[names[i]] = p
	}

	sqlConf := func(db string) *config.SQL {
		return &config.SQL{PluginName: plugin, DatabaseName: db, ConnectAddr: *pg, ConnectProtocol: "tcp", User: *pgUser,
			MaxConns: 20, MaxIdleConns: 20, MaxConnLifetime: time.Hour}
	}
	// Offline: no version check. A namespace registered by `lucy setup` is seen within a second.
	dynConf := dynamicconfig.StaticClient{
		dynamicconfig.EnableServerVersionCheck.Key():      false,
		dynamicconfig.NamespaceCacheRefreshInterval.Key(): time.Second,
	}
	if *dynFile != "" {
		if err := loadDynamicConfig(*dynFile, dynConf); err != nil {
			fail("-dynamic-config: %v", err)
		}
	}
	frontend := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[primitives.FrontendService]))
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence = config.Persistence{
		DefaultStore: defaultStore, VisibilityStore: visibilityName, NumHistoryShards: int32(*shards),
		DataStores: map[string]config.DataStore{
			defaultStore:   {SQL: sqlConf(persistenceDB)},
			visibilityName: {SQL: sqlConf(visibilityDB)},
		},
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10, MasterClusterName: clusterName, CurrentClusterName: clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for svc, p := range ports {
		conf.Services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: p, BindOnIP: "127.0.0.1"}}
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		fail("authorizer: %v", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		fail("claim mapper: %v", err)
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynConf),
	)
	if err != nil {
		fail("server: %v", err)
	}
	if err := srv.Start(); err != nil {
		fail("start: %v", err)
	}
	fmt.Println("temporal-server: serving on", frontend)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if err := srv.Stop(); err != nil {
		fail("stop: %v", err)
	}
}

// loadDynamicConfig adds the settings of a dynamic configuration file, as the server's file-based
// client reads them, to into. It is strict where the server only warns: a key the server does not
// know or a value it would refuse is a mistake in the file, and so are constraints, which this
// server does not need.
func loadDynamicConfig(path string, into dynamicconfig.StaticClient) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lr := dynamicconfig.LoadYamlFile(b)
	if err := errors.Join(append(lr.Errors, lr.Warnings...)...); err != nil {
		return err
	}
	for k, cvs := range lr.Map {
		if len(cvs) != 1 || cvs[0].Constraints != (dynamicconfig.Constraints{}) {
			return fmt.Errorf("%s: one value without constraints expected", k)
		}
		into[k] = cvs[0].Value
	}
	return nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "temporal-server: "+format+"\n", args...)
	os.Exit(1)
}
