// Package deploy holds the container image, the compose cluster and the Kubernetes manifests. Its
// tests check them without Docker or a cluster: they parse every file, check its structure, and check
// that every environment variable set for a lucy process is one the binary reads (config.Variables),
// so a misspelt or removed setting fails CI instead of being silently ignored in production.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"go.temporal.io/server/common/dynamicconfig"
	"go.yaml.in/yaml/v3"

	"github.com/lucy-agent/lucy/config"
)

// lucyVariable reports whether a lucy process reads name.
func lucyVariable(name string) bool { return slices.Contains(config.Variables(), name) }

// unknownVariables returns the names no lucy process reads, with where they were set.
func unknownVariables(where string, names []string) []error {
	var errs []error
	for _, n := range names {
		if !lucyVariable(n) {
			errs = append(errs, fmt.Errorf("%s sets %s, which lucy does not read (config.Variables)", where, n))
		}
	}
	return errs
}

func failAll(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

// --- compose ---

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image           string                   `yaml:"image"`
	Build           any                      `yaml:"build"`
	Command         []string                 `yaml:"command"`
	Environment     map[string]any           `yaml:"environment"`
	EnvFile         any                      `yaml:"env_file"`
	DependsOn       map[string]any           `yaml:"depends_on"`
	Healthcheck     *struct{ Test []string } `yaml:"healthcheck"`
	StopGracePeriod string                   `yaml:"stop_grace_period"`
	ReadOnly        bool                     `yaml:"read_only"`
	Ports           []string                 `yaml:"ports"`
	Volumes         []string                 `yaml:"volumes"`
}

func parseCompose(data []byte) (*composeFile, error) {
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// lucyServices are the services that run the lucy binary: built from deploy/Dockerfile.
func (f *composeFile) lucyServices() map[string]composeService {
	out := map[string]composeService{}
	for name, s := range f.Services {
		if s.Build != nil || strings.HasPrefix(s.Image, "lucy:") {
			out[name] = s
		}
	}
	return out
}

// checkCompose returns every problem of a compose file: the cluster's services, lucy's commands,
// health checks on /readyz, a stop grace period longer than the worker's stop timeout, and only
// variables lucy reads in lucy's services.
func checkCompose(f *composeFile) []error {
	var errs []error
	for _, want := range []string{"postgresql", "temporal", "setup", "temporal-ui", "worker", "gateway"} {
		if _, ok := f.Services[want]; !ok {
			errs = append(errs, fmt.Errorf("compose: no service %q", want))
		}
	}
	if s, ok := f.Services["temporal"]; ok && !strings.HasPrefix(s.Image, "temporalio/") {
		errs = append(errs, fmt.Errorf("compose: temporal runs %q, not a temporalio image", s.Image))
	}
	if s, ok := f.Services["temporal"]; ok && s.Environment["DB"] != "postgres12_pgx" {
		errs = append(errs, fmt.Errorf("compose: temporal is not on PostgreSQL with the pgx driver (DB=%v)", s.Environment["DB"]))
	}
	// The schema job runs before the server.
	if s, ok := f.Services["temporal"]; ok {
		found := false
		for dep := range s.DependsOn {
			if d, ok := f.Services[dep]; ok && strings.HasPrefix(d.Image, "temporalio/admin-tools") {
				found = true
			}
		}
		if !found {
			errs = append(errs, errors.New("compose: temporal does not wait for a schema set-up job (temporalio/admin-tools)"))
		}
	}
	lucy := f.lucyServices()
	for _, name := range []string{"worker", "gateway"} {
		s, ok := lucy[name]
		if !ok {
			errs = append(errs, fmt.Errorf("compose: service %s does not run the lucy image", name))
			continue
		}
		if !slices.Equal(s.Command, []string{name}) {
			errs = append(errs, fmt.Errorf("compose: %s runs %v, want [%s]", name, s.Command, name))
		}
		if s.Healthcheck == nil || !slices.ContainsFunc(s.Healthcheck.Test, func(a string) bool { return strings.HasSuffix(a, "/readyz") }) {
			errs = append(errs, fmt.Errorf("compose: %s has no healthcheck on /readyz", name))
		}
		// Without it the binary dials 127.0.0.1:7233, which is the container itself.
		if _, ok := s.Environment["TEMPORAL_ADDRESS"]; !ok {
			errs = append(errs, fmt.Errorf("compose: %s does not set TEMPORAL_ADDRESS", name))
		}
		if !s.ReadOnly {
			errs = append(errs, fmt.Errorf("compose: %s has a writable root filesystem", name))
		}
	}
	if w, ok := lucy["worker"]; ok {
		errs = append(errs, checkGrace("compose: worker stop_grace_period", w.StopGracePeriod, fmt.Sprint(w.Environment["LUCY_WORKER_STOP_TIMEOUT"]))...)
	}
	for name, s := range lucy {
		names := make([]string, 0, len(s.Environment))
		for k := range s.Environment {
			names = append(names, k)
		}
		slices.Sort(names)
		errs = append(errs, unknownVariables("compose service "+name, names)...)
		if s.EnvFile != "lucy.env" {
			errs = append(errs, fmt.Errorf("compose: %s reads env_file %v, want lucy.env (made from lucy.env.example)", name, s.EnvFile))
		}
	}
	return errs
}

// checkGrace checks that a grace period (a Go duration, or whole seconds) outlasts the worker's stop
// timeout (its default when unset), so that in-flight activities finish before the kill.
func checkGrace(what, grace, stopTimeout string) []error {
	g, err := time.ParseDuration(grace)
	if n, nerr := strconv.Atoi(grace); nerr == nil {
		g, err = time.Duration(n)*time.Second, nil
	}
	if err != nil {
		return []error{fmt.Errorf("%s %q is not a duration", what, grace)}
	}
	stop := config.DefaultWorkerStopTimeout
	if stopTimeout != "" && stopTimeout != "<nil>" {
		if stop, err = time.ParseDuration(stopTimeout); err != nil {
			return []error{fmt.Errorf("%s: LUCY_WORKER_STOP_TIMEOUT %q is not a duration", what, stopTimeout)}
		}
	}
	if g <= stop {
		return []error{fmt.Errorf("%s is %s, not longer than LUCY_WORKER_STOP_TIMEOUT %s: the worker would be killed while activities finish", what, g, stop)}
	}
	return nil
}

// envFileNames returns the names an env file sets, commented-out examples ("# NAME=value")
// included: a person who uncomments one must get a setting lucy reads.
var envLine = regexp.MustCompile(`^(?:#\s?)?([A-Za-z_][A-Za-z0-9_]*)=`)

func envFileNames(r io.Reader) ([]string, error) {
	var names []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := envLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		} else if line != "" && !strings.HasPrefix(line, "#") {
			return nil, fmt.Errorf("line %q is neither NAME=value nor a comment", line)
		}
	}
	return names, sc.Err()
}

// loadCompose parses compose/compose.yaml.
func loadCompose(t *testing.T) *composeFile {
	t.Helper()
	data, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseCompose(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCompose(t *testing.T) {
	f := loadCompose(t)
	failAll(t, checkCompose(f))
}

// TestComposeDynamicConfig: the compose cluster's Temporal server reads Lucy's dynamic
// configuration (mounted where DYNAMIC_CONFIG_FILE_PATH points), and every setting in it is one the
// server knows, with a value it accepts (the server itself only warns). e2e/cluster measures with
// the same file.
func TestComposeDynamicConfig(t *testing.T) {
	s := loadCompose(t).Services["temporal"]
	path, _ := s.Environment["DYNAMIC_CONFIG_FILE_PATH"].(string)
	if path == "" || !slices.Contains(s.Volumes, "./dynamicconfig.yaml:"+path+":ro") {
		t.Errorf("temporal: DYNAMIC_CONFIG_FILE_PATH %q, volumes %v; want ./dynamicconfig.yaml mounted read-only where it points", path, s.Volumes)
	}
	b, err := os.ReadFile("compose/dynamicconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lr := dynamicconfig.LoadYamlFile(b)
	if err := errors.Join(append(lr.Errors, lr.Warnings...)...); err != nil {
		t.Error(err)
	}
	if v := lr.Map[dynamicconfig.TransferProcessorMaxPollRPS.Key()]; len(v) != 1 || v[0].Value != 2000 {
		t.Errorf("history.transferProcessorMaxPollRPS: %v, want 2000", v)
	}
	if v := lr.Map[dynamicconfig.MatchingEnableFairness.Key()]; len(v) != 1 || v[0].Value != true {
		t.Errorf("matching.enableFairness: %v, want true (fairness across teams)", v)
	}
	if v := lr.Map[dynamicconfig.MatchingNumTaskqueueWritePartitions.Key()]; len(v) != 1 || v[0].Value != 1 {
		t.Errorf("matching.numTaskqueueWritePartitions: %v, want 1 (fairness is per partition)", v)
	}
}

func TestEnvExample(t *testing.T) {
	file, err := os.Open("compose/lucy.env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	names, err := envFileNames(file)
	if err != nil {
		t.Fatal(err)
	}
	failAll(t, unknownVariables("lucy.env.example", names))
	// What an operator must fill in is there, uncommented.
	for _, want := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "OPENAI_API_KEY", "LUCY_SECRETS_KEY"} {
		if !slices.Contains(names, want) {
			t.Errorf("lucy.env.example does not set %s", want)
		}
	}
	// Temporal Cloud is documented there.
	for _, want := range []string{"TEMPORAL_API_KEY", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"} {
		if !slices.Contains(names, want) {
			t.Errorf("lucy.env.example does not mention %s", want)
		}
	}
}

// --- Kubernetes ---

// k8sDoc is the part of a manifest the checks read.
type k8sDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"` // ConfigMap
	Spec struct {
		// Job
		BackoffLimit *int `yaml:"backoffLimit"`
		// Deployment
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		// Service
		Ports []struct {
			TargetPort any `yaml:"targetPort"`
		} `yaml:"ports"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
	} `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy                 string `yaml:"restartPolicy"`
	TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name     string `yaml:"name"`
		EmptyDir any    `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type container struct {
	Name string   `yaml:"name"`
	Args []string `yaml:"args"`
	Env  []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe   *probe `yaml:"livenessProbe"`
	ReadinessProbe  *probe `yaml:"readinessProbe"`
	StartupProbe    *probe `yaml:"startupProbe"`
	SecurityContext struct {
		RunAsNonRoot           *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem bool  `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// parseManifests reads every document of a multi-document YAML stream.
func parseManifests(data []byte) ([]k8sDoc, error) {
	var docs []k8sDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var d k8sDoc
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}

// checkManifests returns every problem of a set of manifests.
func checkManifests(docs []k8sDoc) []error {
	var errs []error
	kinds := map[string]map[string]k8sDoc{}
	for i, d := range docs {
		if d.APIVersion == "" || d.Kind == "" || d.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("document %d lacks apiVersion, kind or metadata.name (%q %q %q)", i, d.APIVersion, d.Kind, d.Metadata.Name))
			continue
		}
		if kinds[d.Kind] == nil {
			kinds[d.Kind] = map[string]k8sDoc{}
		}
		kinds[d.Kind][d.Metadata.Name] = d
	}
	for _, name := range []string{"lucy-worker", "lucy-gateway"} {
		d, ok := kinds["Deployment"][name]
		if !ok {
			errs = append(errs, fmt.Errorf("no Deployment %s", name))
			continue
		}
		errs = append(errs, checkDeployment(d)...)
	}
	errs = append(errs, checkSetupJob(kinds["Job"]["lucy-setup"])...)
	if _, ok := kinds["Service"]["lucy-gateway"]; !ok {
		errs = append(errs, errors.New("no Service lucy-gateway"))
	}
	hpa, ok := kinds["HorizontalPodAutoscaler"]["lucy-worker"]
	switch {
	case !ok:
		errs = append(errs, errors.New("no HorizontalPodAutoscaler lucy-worker"))
	case hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "lucy-worker":
		errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler lucy-worker scales %+v", hpa.Spec.ScaleTargetRef))
	case hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas <= hpa.Spec.MinReplicas:
		errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler lucy-worker: replicas %d..%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas))
	}
	// The ConfigMap the Deployments read through envFrom sets variables too.
	for name, cm := range kinds["ConfigMap"] {
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		errs = append(errs, unknownVariables("ConfigMap "+name, keys)...)
	}
	return errs
}

func checkDeployment(d k8sDoc) []error {
	var errs []error
	name := d.Metadata.Name
	pod := d.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		return []error{fmt.Errorf("%s: no containers", name)}
	}
	for _, c := range pod.Containers {
		where := name + "/" + c.Name
		if len(c.Args) != 1 || (c.Args[0] != "worker" && c.Args[0] != "gateway") {
			errs = append(errs, fmt.Errorf("%s: args %v, want [worker] or [gateway]", where, c.Args))
		}
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
			errs = append(errs, fmt.Errorf("%s: no liveness probe on /healthz", where))
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			errs = append(errs, fmt.Errorf("%s: no readiness probe on /readyz", where))
		}
		// The probes must reach the port the process serves them on: the gateway's LUCY_HTTP_ADDR,
		// the worker's LUCY_WORKER_HTTP_ADDR (config's defaults when unset).
		addrVar, addr := "LUCY_HTTP_ADDR", config.DefaultHTTPAddr
		if len(c.Args) == 1 && c.Args[0] == "worker" {
			addrVar, addr = "LUCY_WORKER_HTTP_ADDR", config.DefaultWorkerHTTPAddr
		}
		if v, ok := c.env(addrVar); ok {
			addr = v
		}
		httpPort := -1
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			httpPort, _ = strconv.Atoi(addr[i+1:])
		}
		for _, p := range []*probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if port := resolvePort(c, p.HTTPGet.Port); port != httpPort {
				errs = append(errs, fmt.Errorf("%s: probe %s on port %v, but %s listens on %d", where, p.HTTPGet.Path, p.HTTPGet.Port, addrVar, httpPort))
			}
		}
		nonRoot := (pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot) ||
			(c.SecurityContext.RunAsNonRoot != nil && *c.SecurityContext.RunAsNonRoot)
		if !nonRoot {
			errs = append(errs, fmt.Errorf("%s: runAsNonRoot is not set", where))
		}
		if !c.SecurityContext.ReadOnlyRootFilesystem {
			errs = append(errs, fmt.Errorf("%s: readOnlyRootFilesystem is not set", where))
		}
		// LUCY_DATA_DIR must be a writable emptyDir, the root filesystem being read-only.
		dataDir, _ := c.env("LUCY_DATA_DIR")
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.MountPath != dataDir {
				continue
			}
			for _, v := range pod.Volumes {
				if v.Name == m.Name && v.EmptyDir != nil {
					mounted = true
				}
			}
		}
		if dataDir == "" || !mounted {
			errs = append(errs, fmt.Errorf("%s: LUCY_DATA_DIR (%q) is not an emptyDir mount", where, dataDir))
		}
		secret := false
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && ef.SecretRef.Name == "lucy" {
				secret = true
			}
		}
		if !secret {
			errs = append(errs, fmt.Errorf("%s: does not read the Secret lucy (envFrom secretRef)", where))
		}
		names := make([]string, 0, len(c.Env))
		for _, e := range c.Env {
			names = append(names, e.Name)
		}
		errs = append(errs, unknownVariables(where, names)...)
		if len(c.Args) == 1 && c.Args[0] == "worker" {
			stop, _ := c.env("LUCY_WORKER_STOP_TIMEOUT")
			if pod.TerminationGracePeriodSeconds == nil {
				errs = append(errs, fmt.Errorf("%s: terminationGracePeriodSeconds is not set (the default 30 s cuts in-flight activities short)", where))
			} else {
				errs = append(errs, checkGrace(where+" terminationGracePeriodSeconds", strconv.Itoa(*pod.TerminationGracePeriodSeconds), stop)...)
			}
		}
	}
	return errs
}

// checkSetupJob checks the Job that runs `lucy setup`: the command, the same settings as the
// worker (ConfigMap and Secret), a restart policy a Job accepts, and the pod security of the others.
func checkSetupJob(d k8sDoc) []error {
	if d.Kind != "Job" {
		return []error{errors.New("no Job lucy-setup (`lucy setup` registers the search attributes the worker needs)")}
	}
	pod := d.Spec.Template.Spec
	if pod.RestartPolicy != "OnFailure" && pod.RestartPolicy != "Never" {
		return []error{fmt.Errorf("Job lucy-setup: restartPolicy %q, want OnFailure or Never", pod.RestartPolicy)}
	}
	if len(pod.Containers) != 1 {
		return []error{fmt.Errorf("Job lucy-setup: %d containers, want 1", len(pod.Containers))}
	}
	var errs []error
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"setup"}) {
		errs = append(errs, fmt.Errorf("Job lucy-setup: args %v, want [setup]", c.Args))
	}
	var cm, secret bool
	for _, ef := range c.EnvFrom {
		cm = cm || (ef.ConfigMapRef != nil && ef.ConfigMapRef.Name == "lucy")
		secret = secret || (ef.SecretRef != nil && ef.SecretRef.Name == "lucy")
	}
	if !cm || !secret {
		errs = append(errs, errors.New("Job lucy-setup: does not read the ConfigMap and the Secret lucy the worker reads (TEMPORAL_ settings)"))
	}
	if (pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot) || !c.SecurityContext.ReadOnlyRootFilesystem {
		errs = append(errs, errors.New("Job lucy-setup: not runAsNonRoot with a read-only root filesystem"))
	}
	names := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	return append(errs, unknownVariables("Job lucy-setup", names)...)
}

// resolvePort turns a probe's port (a number or a container port's name) into a number, -1 when
// the name is not a port of the container.
func resolvePort(c container, p any) int {
	switch v := p.(type) {
	case int:
		return v
	case string:
		for _, cp := range c.Ports {
			if cp.Name == v {
				return cp.ContainerPort
			}
		}
	}
	return -1
}

func TestK8sManifests(t *testing.T) {
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/ (%v)", err)
	}
	var docs []k8sDoc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := parseManifests(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		docs = append(docs, d...)
	}
	failAll(t, checkManifests(docs))
}

// The Dockerfile builds ./cmd/lucy statically, sets only variables lucy reads, and runs as a
// numeric non-root user (which runAsNonRoot can verify).
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{"CGO_ENABLED=0", "-tags nodev", "./cmd/lucy", "./deploy/healthcheck", "USER 65532:65532", `ENTRYPOINT ["/usr/local/bin/lucy"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, dir := range []string{"../cmd/lucy", "healthcheck"} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("the Dockerfile builds %s: %v", dir, err)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "ENV" {
			continue
		}
		var names []string
		for _, kv := range f[1:] {
			names = append(names, strings.SplitN(kv, "=", 2)[0])
		}
		failAll(t, unknownVariables("Dockerfile", names))
	}
}

// --- the checks can fail ---

func TestChecksCatchMistakes(t *testing.T) {
	t.Run("unknown variable", func(t *testing.T) {
		errs := unknownVariables("test", []string{"LUCY_DATA_DIR", "LUCY_DATADIR", "TEMPORAL_TLS_CERT_PATH"})
		if len(errs) != 2 || !strings.Contains(errs[0].Error(), "LUCY_DATADIR") || !strings.Contains(errs[1].Error(), "TEMPORAL_TLS_CERT_PATH") {
			t.Errorf("errs = %v, want LUCY_DATADIR and TEMPORAL_TLS_CERT_PATH caught", errs)
		}
	})
	t.Run("compose", func(t *testing.T) {
		f := loadCompose(t)
		w := f.Services["worker"]
		w.Environment["LUCY_NOT_A_SETTING"] = "1"
		w.StopGracePeriod = "30s"
		f.Services["worker"] = w
		delete(f.Services, "temporal-ui")
		got := fmt.Sprint(checkCompose(f))
		for _, want := range []string{"LUCY_NOT_A_SETTING", "stop_grace_period", `no service "temporal-ui"`} {
			if !strings.Contains(got, want) {
				t.Errorf("checkCompose missed %s: %s", want, got)
			}
		}
	})
	t.Run("setup job", func(t *testing.T) {
		docs, err := parseManifests([]byte(`
apiVersion: batch/v1
kind: Job
metadata: {name: lucy-setup}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: setup
          args: ["worker"]
          envFrom:
            - secretRef: {name: lucy}
`))
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(checkSetupJob(docs[0]))
		for _, want := range []string{"want [setup]", "ConfigMap and the Secret", "runAsNonRoot"} {
			if !strings.Contains(got, want) {
				t.Errorf("checkSetupJob missed %q: %s", want, got)
			}
		}
	})
	t.Run("env file", func(t *testing.T) {
		names, err := envFileNames(strings.NewReader("# a comment\nSLACK_BOT_TOKEN=x\n# LUCY_MODLE_FAST=y\n"))
		if err != nil {
			t.Fatal(err)
		}
		if errs := unknownVariables("env", names); len(errs) != 1 || !strings.Contains(errs[0].Error(), "LUCY_MODLE_FAST") {
			t.Errorf("errs = %v, want the commented-out LUCY_MODLE_FAST caught", errs)
		}
		if _, err := envFileNames(strings.NewReader("export SLACK_BOT_TOKEN x\n")); err == nil {
			t.Error("a line that is not NAME=value was accepted")
		}
	})
	t.Run("k8s", func(t *testing.T) {
		docs, err := parseManifests([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: lucy-worker
spec:
  template:
    spec:
      containers:
        - name: worker
          args: ["worker"]
          env:
            - name: LUCY_DATA_DIR
              value: /data
            - name: OPENAI_KEY
              value: x
          livenessProbe:
            httpGet: {path: /health, port: 3000}
---
apiVersion: v1
kind: ConfigMap
metadata: {}
`))
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(checkManifests(docs))
		for _, want := range []string{
			"OPENAI_KEY", "liveness probe on /healthz", "readiness probe on /readyz", "runAsNonRoot",
			"readOnlyRootFilesystem", "emptyDir", "Secret lucy", "terminationGracePeriodSeconds",
			"lacks apiVersion, kind or metadata.name", "no Deployment lucy-gateway", "no Service lucy-gateway",
			"no HorizontalPodAutoscaler", "no Job lucy-setup",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("checkManifests missed %q: %s", want, got)
			}
		}
	})
	t.Run("grace", func(t *testing.T) {
		if errs := checkGrace("x", "300", "5m"); len(errs) != 1 {
			t.Errorf("300 s grace with a 5m stop timeout: %v", errs)
		}
		if errs := checkGrace("x", "330", ""); len(errs) != 0 {
			t.Errorf("330 s grace with the default stop timeout: %v", errs)
		}
	})
}

// The compose file as Docker Compose itself reads it: compose-go is the loader `docker compose`
// uses, with its schema validation, YAML merge keys, interpolation and consistency checks (every
// depends_on names a service, and so on). It runs the way deploy/README.md says: lucy.env and
// temporal-ui.env made from the examples next to compose.yaml. Then the order of the one-shot jobs:
// worker and gateway start only after `lucy setup` has succeeded, and setup is not restarted once
// it has.
func TestComposeAsDockerComposeReadsIt(t *testing.T) {
	dir := t.TempDir()
	for from, to := range map[string]string{"compose/compose.yaml": "compose.yaml", "compose/lucy.env.example": "lucy.env", "compose/temporal-ui.env.example": "temporal-ui.env"} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir), cli.WithEnv([]string{}), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker compose would refuse compose.yaml: %v", err)
	}
	setup, err := p.GetService("setup")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal([]string(setup.Command), []string{"setup"}) || setup.Image != "lucy:local" {
		t.Errorf("setup runs %v on %q, want [setup] on lucy:local", setup.Command, setup.Image)
	}
	if setup.Restart == "unless-stopped" || setup.Restart == "always" {
		t.Errorf("setup restarts %q: a one-shot would run forever", setup.Restart)
	}
	if d, ok := setup.DependsOn["temporal"]; !ok || d.Condition != "service_healthy" {
		t.Errorf("setup depends on %+v, want temporal healthy", setup.DependsOn)
	}
	for _, name := range []string{"worker", "gateway"} {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := s.DependsOn["setup"]; !ok || d.Condition != "service_completed_successfully" {
			t.Errorf("%s depends on %+v, want setup completed successfully", name, s.DependsOn)
		}
		if s.Environment["TEMPORAL_ADDRESS"] == nil || *s.Environment["TEMPORAL_ADDRESS"] != *setup.Environment["TEMPORAL_ADDRESS"] {
			t.Errorf("%s and setup talk to different Temporal addresses", name)
		}
	}
}
