// Package deploy holds no code: its tests check the Kubernetes manifests
// of deploy/kubernetes against each other and against the gateway's own
// configuration rules, and the image's promises (a static binary that
// runs as a non-root user with nothing from the file system but its
// configuration and certificates).
package deploy

import (
	"cmp"
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	_ "github.com/dubbogw/dubbogw/all"
	"github.com/dubbogw/dubbogw/config"
)

// manifests reads every document of kubernetes/*.yaml, by kind.
func manifests(t *testing.T) map[string][]map[string]any {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kubernetes/*.yaml (%v)", err)
	}
	kinds := map[string][]map[string]any{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			kind, _ := doc["kind"].(string)
			if kind == "" || doc["apiVersion"] == nil {
				t.Errorf("%s: a document without kind or apiVersion", file)
			}
			kinds[kind] = append(kinds[kind], doc)
		}
		f.Close()
	}
	return kinds
}

// at walks a decoded document by a dotted path (list indexes as numbers).
func at(doc any, p string) any {
	for _, part := range strings.Split(p, ".") {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(v) {
				return nil
			}
			doc = v[i]
		default:
			return nil
		}
	}
	return doc
}

func str(doc any, p string) string { s, _ := at(doc, p).(string); return s }

func labels(doc any, p string) map[string]string {
	out := map[string]string{}
	m, _ := at(doc, p).(map[string]any)
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// selects reports whether selector (matchLabels) picks labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func one(t *testing.T, kinds map[string][]map[string]any, kind string) map[string]any {
	t.Helper()
	if len(kinds[kind]) != 1 {
		t.Fatalf("want one %s, have %d", kind, len(kinds[kind]))
	}
	return kinds[kind][0]
}

// TestKubernetesManifests checks the invariants a hand edit could break:
// the config the ConfigMap carries is valid for this gateway; the
// Deployment mounts it where --config says; the probes reach the admin
// listener's port and paths; shutdown fits the grace period; the pods
// run non-root on a read-only root file system with resources; every
// selector picks the pods; the HPA, the Service, the PodDisruptionBudget
// and the ServiceMonitor point at what exists.
func TestKubernetesManifests(t *testing.T) {
	kinds := manifests(t)
	dep := one(t, kinds, "Deployment")
	cm := one(t, kinds, "ConfigMap")
	svc := one(t, kinds, "Service")
	pdb := one(t, kinds, "PodDisruptionBudget")
	sm := one(t, kinds, "ServiceMonitor")
	hpa := one(t, kinds, "HorizontalPodAutoscaler")
	name := str(dep, "metadata.name")
	podLabels := labels(dep, "spec.template.metadata.labels")

	// The config: valid as the gateway loads it (the token file, a mounted
	// Secret, stands in as a temporary file).
	data, _ := at(cm, "data").(map[string]any)
	text, _ := data["config.yaml"].(string)
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(text, "/etc/dubbogw/secrets/admin-token", tokenFile)), "configmap.yaml", nil)
	if err == nil {
		err = config.Validate(cfg)
	}
	if err != nil {
		t.Fatalf("the ConfigMap's config.yaml: %v", err)
	}

	if n, _ := at(dep, "spec.replicas").(int); n != 2 {
		t.Errorf("Deployment replicas %v, want 2", at(dep, "spec.replicas"))
	}
	containers, _ := at(dep, "spec.template.spec.containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("want one container, have %d", len(containers))
	}
	c := containers[0]

	// --config names a file in a mount of the ConfigMap's config.yaml.
	var args []string
	for _, a := range at(c, "args").([]any) {
		args = append(args, a.(string))
	}
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("args %v lack --config FILE", args)
	}
	configPath := args[i+1]
	mounted := false
	for _, m := range at(c, "volumeMounts").([]any) {
		if str(m, "mountPath") != path.Dir(configPath) {
			continue
		}
		for _, v := range at(dep, "spec.template.spec.volumes").([]any) {
			if str(v, "name") == str(m, "name") && str(v, "configMap.name") == str(cm, "metadata.name") &&
				str(v, "configMap.items.0.key") == "config.yaml" && str(v, "configMap.items.0.path") == path.Base(configPath) {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("no volume mounts the ConfigMap's config.yaml at %s (--config)", configPath)
	}
	// The admin token file is a mounted Secret's key.
	tokenMounted := false
	wantToken := "/etc/dubbogw/secrets/admin-token"
	for _, m := range at(c, "volumeMounts").([]any) {
		for _, v := range at(dep, "spec.template.spec.volumes").([]any) {
			if str(v, "name") == str(m, "name") && str(v, "secret.secretName") != "" &&
				path.Join(str(m, "mountPath"), str(v, "secret.items.0.path")) == wantToken {
				tokenMounted = true
				if got := str(sm, "spec.endpoints.0.bearerTokenSecret.name"); got != str(v, "secret.secretName") ||
					str(sm, "spec.endpoints.0.bearerTokenSecret.key") != str(v, "secret.items.0.key") {
					t.Errorf("the ServiceMonitor's bearer token %s is not the Secret the pods read the admin token from", got)
				}
			}
		}
	}
	if !tokenMounted || !strings.Contains(text, "token_file: "+wantToken) {
		t.Errorf("admin.token_file %s is not a mounted Secret", wantToken)
	}

	// Ports: http is the data listener's, admin the admin listener's; the
	// probes use admin and the gateway's probe paths.
	ports := map[string]int{}
	for _, p := range at(c, "ports").([]any) {
		ports[str(p, "name")], _ = at(p, "containerPort").(int)
	}
	for name, listen := range map[string]string{"http": cfg.Listen, "admin": cfg.Admin.Listen} {
		_, port, _ := net.SplitHostPort(listen)
		if strconv.Itoa(ports[name]) != port {
			t.Errorf("container port %s is %d, the config listens on %s", name, ports[name], listen)
		}
	}
	if host, _, _ := net.SplitHostPort(cfg.Admin.Listen); host == "127.0.0.1" || host == "localhost" {
		t.Errorf("admin.listen %s: the kubelet and Prometheus cannot reach loopback", cfg.Admin.Listen)
	}
	// The scheme follows admin.tls: the kubelet speaks HTTPS to an admin
	// listener that serves it (and cannot present a client certificate).
	wantScheme := "HTTP"
	if cfg.Admin.TLS.Set() {
		wantScheme = "HTTPS"
		if cfg.Admin.TLS.ClientAuth == config.ClientAuthRequire {
			t.Errorf("admin.tls.client_auth require: the kubelet's probes present no client certificate")
		}
	}
	for probe, wantPath := range map[string]string{"startupProbe": "/livez", "livenessProbe": "/livez", "readinessProbe": "/readyz"} {
		if str(c, probe+".httpGet.path") != wantPath || str(c, probe+".httpGet.port") != "admin" {
			t.Errorf("%s: %v %v, want %s on the admin port", probe, at(c, probe+".httpGet.path"), at(c, probe+".httpGet.port"), wantPath)
		}
		if scheme := cmp.Or(str(c, probe+".httpGet.scheme"), "HTTP"); scheme != wantScheme {
			t.Errorf("%s: scheme %s, want %s (admin.tls set: %v)", probe, scheme, wantScheme, cfg.Admin.TLS.Set())
		}
	}
	for _, e := range at(sm, "spec.endpoints").([]any) {
		if scheme := cmp.Or(str(e, "scheme"), "http"); !strings.EqualFold(scheme, wantScheme) {
			t.Errorf("ServiceMonitor endpoint scheme %s, want %s (admin.tls set: %v)", scheme, strings.ToLower(wantScheme), cfg.Admin.TLS.Set())
		}
	}

	// Shutdown: the grace period covers shutdown.delay and drain_timeout
	// with room; no preStop hook adds to them unaccounted.
	grace, _ := at(dep, "spec.template.spec.terminationGracePeriodSeconds").(int)
	need := cfg.Shutdown.DrainTimeout.D().Seconds() + 5
	if cfg.Shutdown.Delay != nil {
		need += cfg.Shutdown.Delay.D().Seconds()
	}
	if float64(grace) < need {
		t.Errorf("terminationGracePeriodSeconds %d < shutdown.delay + drain_timeout + 5s = %vs", grace, need)
	}
	if at(c, "lifecycle.preStop") != nil {
		t.Error("a preStop hook: the gateway's shutdown.delay is the wait (see deployment.yaml)")
	}

	// Non-root, read-only root file system, no privilege; resources.
	for p, want := range map[string]any{
		"spec.template.spec.securityContext.runAsNonRoot": true,
		"spec.template.spec.securityContext.runAsUser":    65532,
	} {
		if got := at(dep, p); got != want {
			t.Errorf("%s = %v, want %v", p, got, want)
		}
	}
	for p, want := range map[string]any{
		"securityContext.readOnlyRootFilesystem":   true,
		"securityContext.allowPrivilegeEscalation": false,
		"securityContext.capabilities.drop.0":      "ALL",
	} {
		if got := at(c, p); got != want {
			t.Errorf("container %s = %v, want %v", p, got, want)
		}
	}
	for _, p := range []string{"resources.requests.cpu", "resources.requests.memory", "resources.limits.memory"} {
		if str(c, p) == "" {
			t.Errorf("container %s unset", p)
		}
	}

	// Selectors and references.
	if !selects(labels(dep, "spec.selector.matchLabels"), podLabels) {
		t.Error("the Deployment's selector does not pick its pods")
	}
	if !selects(labels(svc, "spec.selector"), podLabels) {
		t.Error("the Service's selector does not pick the pods")
	}
	for _, p := range at(svc, "spec.ports").([]any) {
		if _, ok := ports[str(p, "targetPort")]; !ok {
			t.Errorf("the Service's port %s targets %v, not a container port", str(p, "name"), at(p, "targetPort"))
		}
	}
	if !selects(labels(pdb, "spec.selector.matchLabels"), podLabels) {
		t.Error("the PodDisruptionBudget's selector does not pick the pods")
	}
	if !selects(labels(sm, "spec.selector.matchLabels"), labels(svc, "metadata.labels")) {
		t.Error("the ServiceMonitor's selector does not pick the Service")
	}
	svcPorts := map[string]bool{}
	for _, p := range at(svc, "spec.ports").([]any) {
		svcPorts[str(p, "name")] = true
	}
	if port := str(sm, "spec.endpoints.0.port"); !svcPorts[port] || port != "admin" || str(sm, "spec.endpoints.0.path") != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes port %q path %q, want the Service's admin port, /metrics", port, str(sm, "spec.endpoints.0.path"))
	}
	if str(hpa, "spec.scaleTargetRef.kind") != "Deployment" || str(hpa, "spec.scaleTargetRef.name") != name ||
		str(hpa, "spec.scaleTargetRef.apiVersion") != str(dep, "apiVersion") {
		t.Errorf("the HPA targets %v, want the Deployment %s", at(hpa, "spec.scaleTargetRef"), name)
	}
	if min, _ := at(hpa, "spec.minReplicas").(int); min < 2 {
		t.Errorf("HPA minReplicas %d, want at least 2", min)
	}

	// The kustomization lists every manifest.
	var kust struct {
		Resources []string `yaml:"resources"`
	}
	b, err := os.ReadFile("kubernetes/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	want := map[string]bool{}
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" {
			want[base] = true
		}
	}
	got := map[string]bool{}
	for _, r := range kust.Resources {
		got[r] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("kustomization resources %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}
