package deploycheck

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"boxoffice.dev/platform/identity"
	"boxoffice.dev/platform/testkit"
	"boxoffice.dev/services/waitroom"
)

// TestAlertRules runs Prometheus's own checker on the alert rules, their Kubernetes copy
// included, and their unit tests (alerts_test.yml: every alert firing on synthetic series,
// and a look-alike that does not). promtool comes with Prometheus (Debian: prometheus).
func TestAlertRules(t *testing.T) {
	w := loadWorkspace(t)
	promtool := testkit.LookPath(t, "promtool")
	dir := filepath.Join(w.Root, "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(dir, "alerts.yml")},
		{"check", "rules", filepath.Join(w.Root, "deploy", "k8s", "base", "prometheus-alerts.yaml")},
		{"test", "rules", filepath.Join(dir, "alerts_test.yml")},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRulesTestEveryAlert: each alert of alerts.yml is expected to fire somewhere in
// alerts_test.yml, so a new alert cannot ship untested.
func TestAlertRulesTestEveryAlert(t *testing.T) {
	w := loadWorkspace(t)
	alerts, err := Alerts(filepath.Join(w.Root, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := readAlertTests(t, filepath.Join(w.Root, "deploy", "prometheus", "alerts_test.yml"))
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fired[at.AlertName] = true
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("alerts.yml has no alerts")
	}
	for _, a := range alerts {
		if !fired[a.Name] {
			t.Errorf("alert %s is never expected to fire in alerts_test.yml", a.Name)
		}
	}
}

// TestKubernetesAlerts keeps deploy/k8s/base/prometheus-alerts.yaml the copy of
// deploy/prometheus/alerts.yml that KubernetesAlerts makes.
func TestKubernetesAlerts(t *testing.T) {
	w := loadWorkspace(t)
	src, err := os.ReadFile(filepath.Join(w.Root, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, filepath.Join(w.Root, "deploy", "k8s", "base", "prometheus-alerts.yaml"), KubernetesAlerts(src))
}

// TestAlertsQueryRealMetrics holds every series and label the alerts and their unit tests
// name to what a busy gateway and a busy waiting room export (scraped /metrics): an alert on
// a renamed series would otherwise never fire, and its unit test would still pass.
func TestAlertsQueryRealMetrics(t *testing.T) {
	w := loadWorkspace(t)
	scraped := map[string]map[string]bool{}
	for _, s := range []map[string]map[string]bool{busyGatewayMetrics(t), scrapeBusyWaitroom(t)} {
		for name, labels := range s {
			scraped[name] = labels
		}
	}
	alerts, err := Alerts(filepath.Join(w.Root, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		checkQuery(t, "alert "+a.Name, a.Expr, scraped)
	}
	for _, tc := range readAlertTests(t, filepath.Join(w.Root, "deploy", "prometheus", "alerts_test.yml")).Tests {
		for _, s := range tc.InputSeries {
			checkQuery(t, "alerts_test.yml series "+s.Series, s.Series, scraped)
		}
	}
}

// alertTests is the part of a promtool unit-test file the checks read.
type alertTests struct {
	Tests []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			AlertName string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readAlertTests(t *testing.T, file string) alertTests {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var at alertTests
	if err := yaml.Unmarshal(data, &at); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return at
}

// gatewayScrape is scrapeBusyGateway's answer, shared by the tests that need one: driving a
// gateway through every outcome takes seconds.
var gatewayScrape struct {
	once    sync.Once
	samples map[string]map[string]bool
}

// busyGatewayMetrics is scrapeBusyGateway, run once for all the tests of the package.
func busyGatewayMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	gatewayScrape.once.Do(func() { gatewayScrape.samples = scrapeBusyGateway(t) })
	if gatewayScrape.samples == nil {
		t.Fatal("the busy gateway could not be scraped (see the first test that tried)")
	}
	return gatewayScrape.samples
}

// scrapeBusyWaitroom returns the sample names of a waiting room's /metrics, each with its
// label names, once an event's queue has held fans and admitted one.
func scrapeBusyWaitroom(t *testing.T) map[string]map[string]bool {
	t.Helper()
	rd := testkit.StartRedis(t)
	wr := testkit.RunProcess(t, waitroom.Run, map[string]string{
		"REDIS_URL":               rd.URL(),
		"WAITROOM_ADMIT_INTERVAL": "20ms",
		// No catalog answers: the queue below is opened by the admin endpoint.
		"CATALOG_GRPC_ADDR": fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
	})
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(method, path, user, body string) {
		req, _ := http.NewRequest(method, wr.HTTPURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if user != "" {
			req.Header.Set(identity.HeaderUser, user)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s = %d, want 200", method, path, resp.StatusCode)
		}
	}
	const admin, queue = "/v1/admin/events/evt-alerts/queue", "/v1/events/evt-alerts/queue"
	send(http.MethodPut, admin, "", `{"admit_per_second": 0}`) // doors closed while fans join
	send(http.MethodPost, queue, "acc-1", "")
	send(http.MethodPost, queue, "acc-2", "")
	testkit.Eventually(t, 10*time.Second, "the waitroom exports its queue's length", func() bool {
		_, ok := scrape(t, wr.HTTPURL)["boxoffice_waitroom_waiting"]
		return ok
	})
	send(http.MethodPut, admin, "", `{"admit_per_second": 1}`)
	testkit.Eventually(t, 10*time.Second, "the waitroom exports its admissions", func() bool {
		_, ok := scrape(t, wr.HTTPURL)["boxoffice_waitroom_admissions_total"]
		return ok
	})
	return scrape(t, wr.HTTPURL)
}
