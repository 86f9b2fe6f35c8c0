package admission

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDeployManifests checks that ../deploy/*.yaml and
// ../deploy/kubernetes/*.yaml parse and scale on the metric this package
// exports.
func TestDeployManifests(t *testing.T) {
	top, err := filepath.Glob("../deploy/*.yaml")
	if err != nil || len(top) == 0 {
		t.Fatalf("no ../deploy/*.yaml (err %v)", err)
	}
	kube, err := filepath.Glob("../deploy/kubernetes/*.yaml")
	if err != nil || len(kube) == 0 {
		t.Fatalf("no ../deploy/kubernetes/*.yaml (err %v)", err)
	}
	files := append(top, kube...)
	kinds := make(map[string][]map[string]any)
	for _, file := range files {
		for _, doc := range yamlDocuments(t, file) {
			kind, _ := doc["kind"].(string)
			if kind == "" || doc["apiVersion"] == nil {
				t.Errorf("%s: a document without kind or apiVersion", file)
			}
			kinds[kind] = append(kinds[kind], doc)
		}
	}

	if len(kinds["HorizontalPodAutoscaler"]) != 1 {
		t.Fatalf("want one HorizontalPodAutoscaler, have %d", len(kinds["HorizontalPodAutoscaler"]))
	}
	hpa := kinds["HorizontalPodAutoscaler"][0]
	for path, want := range map[string]any{
		"apiVersion":                                       "autoscaling/v2",
		"spec.scaleTargetRef.kind":                         "Deployment",
		"spec.scaleTargetRef.name":                         "dubbogw",
		"spec.minReplicas":                                 2,
		"spec.maxReplicas":                                 20,
		"spec.metrics.0.type":                              "Pods",
		"spec.metrics.0.pods.metric.name":                  MetricSaturation,
		"spec.metrics.0.pods.target.type":                  "AverageValue",
		"spec.metrics.0.pods.target.averageValue":          "600m",
		"spec.behavior.scaleUp.stabilizationWindowSeconds": 0,
	} {
		if got := lookup(hpa, path); got != want {
			t.Errorf("HorizontalPodAutoscaler %s = %v, want %v", path, got, want)
		}
	}
	if down, _ := lookup(hpa, "spec.behavior.scaleDown.stabilizationWindowSeconds").(int); down < 300 {
		t.Errorf("scaleDown.stabilizationWindowSeconds = %d, want at least 300 (scale down slowly)", down)
	}

	var rules []map[string]any
	for _, cm := range kinds["ConfigMap"] {
		text, _ := lookup(cm, "data.config.yaml").(string)
		var adapter struct {
			Rules []map[string]any `yaml:"rules"`
		}
		if err := yaml.Unmarshal([]byte(text), &adapter); err != nil {
			t.Fatalf("ConfigMap %v: config.yaml: %v", lookup(cm, "metadata.name"), err)
		}
		rules = append(rules, adapter.Rules...)
	}
	found := false
	for _, rule := range rules {
		if lookup(rule, "name.as") != MetricSaturation {
			continue
		}
		found = true
		series, _ := rule["seriesQuery"].(string)
		query, _ := rule["metricsQuery"].(string)
		if !strings.HasPrefix(series, MetricSaturation+"{") || !strings.Contains(query, `scope="global"`) ||
			!strings.Contains(query, "<<.Series>>") || !strings.Contains(query, "<<.LabelMatchers>>") {
			t.Errorf("adapter rule for %s: seriesQuery %q, metricsQuery %q: want the series, global scope only", MetricSaturation, series, query)
		}
		if lookup(rule, "resources.overrides.pod.resource") != "pod" {
			t.Errorf("adapter rule for %s does not map the pod label to pods", MetricSaturation)
		}
	}
	if !found {
		t.Errorf("no prometheus-adapter rule serves %s (rules: %v)", MetricSaturation, rules)
	}
}

// yamlDocuments decodes every document of a YAML file.
func yamlDocuments(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var docs []map[string]any
	dec := yaml.NewDecoder(f)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// lookup follows a dotted path of map keys and list indexes; the last
// segment may itself contain dots when no shorter key matches
// ("data.config.yaml").
func lookup(v any, path string) any {
	if path == "" {
		return v
	}
	switch node := v.(type) {
	case map[string]any:
		if got, ok := node[path]; ok {
			return got
		}
		key, rest, _ := strings.Cut(path, ".")
		return lookup(node[key], rest)
	case []any:
		key, rest, _ := strings.Cut(path, ".")
		for i, item := range node {
			if key == strconv.Itoa(i) {
				return lookup(item, rest)
			}
		}
	}
	return nil
}
