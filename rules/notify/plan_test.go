package notify

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func rule(name, severity string) *alerting.Rule {
	return &alerting.Rule{Name: name, Severity: severity, Labels: map[string]string{"team": "ci"}}
}

func firing(r *alerting.Rule, changed bool, labels map[string]string) Evaluated {
	return Evaluated{Rule: r, Changed: changed, Annotations: map[string]string{"summary": "s"},
		Alert: alerting.Alert{Rule: r.Name, Labels: labels, State: alerting.StateFiring, ActiveAt: t0, FiredAt: t0}}
}

func resolved(r *alerting.Rule, labels map[string]string) Evaluated {
	e := firing(r, true, labels)
	e.Alert.State, e.Alert.ResolvedAt = alerting.StateResolved, t0.Add(time.Hour)
	return e
}

// summary lists notifications as receiver/reason/status/alert statuses.
func summary(ns []Notification) string {
	var out []string
	for _, n := range ns {
		var st []string
		for _, a := range n.Message.Alerts {
			st = append(st, a.Labels["alertname"]+":"+a.Status)
		}
		out = append(out, fmt.Sprintf("%s/%s/%s%s[%s]", n.Receiver, n.Reason, n.Message.Status, n.Message.GroupKey, strings.Join(st, ",")))
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	t.Parallel()
	hook := &alerting.Receiver{Name: "hook", Kind: alerting.KindWebhook, SendResolved: true}
	quiet := &alerting.Receiver{Name: "quiet", Kind: alerting.KindWebhook}
	am := &alerting.Receiver{Name: "am", Kind: alerting.KindAlertmanager}
	recvs := []*alerting.Receiver{hook, quiet, am}
	root := func(recv string) *alerting.Route {
		return &alerting.Route{Receiver: recv, GroupBy: []string{"alertname"}}
	}
	a, b := rule("a", "warning"), rule("b", "critical")
	none := map[string]string{}
	key := func(recv, alert string) string { return recv + "\x00" + `{}:{alertname="` + alert + `"}` }

	tests := []struct {
		name          string
		route         *alerting.Route
		alerts        []Evaluated
		lastSent      map[string]time.Time
		now           time.Time
		queue, resend string
		after         []string // lastSent keys afterwards
	}{
		{name: "fires: one notification", route: root("hook"), alerts: []Evaluated{firing(a, true, none)},
			queue: `hook/change/firing{}:{alertname="a"}[a:firing]`, after: []string{key("hook", "a")}},
		{name: "keeps firing: silent", route: root("hook"), alerts: []Evaluated{firing(a, false, none)},
			lastSent: map[string]time.Time{key("hook", "a"): t0}, now: t0.Add(time.Hour), after: []string{key("hook", "a")}},
		{name: "firing but never notified (receiver added later)", route: root("hook"), alerts: []Evaluated{firing(a, false, none)},
			queue: `hook/change/firing{}:{alertname="a"}[a:firing]`, after: []string{key("hook", "a")}},
		{name: "repeat_interval not yet", route: &alerting.Route{Receiver: "hook", GroupBy: []string{"alertname"}, RepeatInterval: 4 * time.Hour},
			alerts: []Evaluated{firing(a, false, none)}, lastSent: map[string]time.Time{key("hook", "a"): t0}, now: t0.Add(4*time.Hour - time.Second),
			after: []string{key("hook", "a")}},
		{name: "repeat_interval passed", route: &alerting.Route{Receiver: "hook", GroupBy: []string{"alertname"}, RepeatInterval: 4 * time.Hour},
			alerts: []Evaluated{firing(a, false, none)}, lastSent: map[string]time.Time{key("hook", "a"): t0}, now: t0.Add(4 * time.Hour),
			queue: `hook/repeat/firing{}:{alertname="a"}[a:firing]`, after: []string{key("hook", "a")}},
		{name: "resolves: one notification, group forgotten", route: root("hook"), alerts: []Evaluated{resolved(a, none)},
			lastSent: map[string]time.Time{key("hook", "a"): t0}, queue: `hook/change/resolved{}:{alertname="a"}[a:resolved]`},
		{name: "send_resolved false", route: root("quiet"), alerts: []Evaluated{resolved(a, none)},
			lastSent: map[string]time.Time{key("quiet", "a"): t0}},
		{name: "an old resolution is not sent again", route: root("hook"),
			alerts: []Evaluated{func() Evaluated { e := resolved(a, none); e.Changed = false; return e }()}},
		{name: "pending notifies nothing", route: root("hook"),
			alerts: []Evaluated{func() Evaluated { e := firing(a, true, none); e.Alert.State = alerting.StatePending; return e }()}},
		{name: "a group carries its other firing alerts", route: &alerting.Route{Receiver: "hook", GroupBy: []string{"team"}},
			alerts:   []Evaluated{firing(a, false, none), resolved(b, none)},
			lastSent: map[string]time.Time{"hook\x00" + `{}:{team="ci"}`: t0},
			queue:    `hook/change/firing{}:{team="ci"}[a:firing,b:resolved]`, after: []string{"hook\x00" + `{}:{team="ci"}`}},
		{name: "group_by ... : one alert a group", route: &alerting.Route{Receiver: "hook", GroupBy: []string{"..."}},
			alerts: []Evaluated{firing(a, true, map[string]string{"provider": "x"})},
			queue:  `hook/change/firing{}:{alertname="a", provider="x", severity="warning", team="ci"}[a:firing]`,
			after:  []string{"hook\x00" + `{}:{alertname="a", provider="x", severity="warning", team="ci"}`}},
		{name: "Alertmanager: change queued, steady firing refreshed", route: root("am"),
			alerts:   []Evaluated{firing(a, true, none), firing(b, false, none)},
			lastSent: map[string]time.Time{key("am", "b"): t0},
			queue:    `am/change/firing{}:{alertname="a"}[a:firing]`, resend: `am/refresh/firing{}:{alertname="b"}[b:firing]`,
			after: []string{key("am", "a"), key("am", "b")}},
		{name: "Alertmanager always gets resolutions", route: root("am"), alerts: []Evaluated{resolved(a, none)},
			queue: `am/change/resolved{}:{alertname="a"}[a:resolved]`},
		{name: "routes: critical to am and on (continue), the rest to hook", route: &alerting.Route{Receiver: "hook", GroupBy: []string{"alertname"},
			Routes: []*alerting.Route{{Match: map[string]string{"severity": "critical"}, Receiver: "am", Continue: true}, {Match: map[string]string{"team": "ci"}}}},
			alerts: []Evaluated{firing(a, true, none), firing(b, true, none)},
			queue:  `am/change/firing{}:{alertname="b"}[b:firing] hook/change/firing{}:{alertname="a"}[a:firing] hook/change/firing{}:{alertname="b"}[b:firing]`,
			after:  []string{key("am", "b"), key("hook", "a"), key("hook", "b")}},
		{name: "no route: nothing, state cleared", alerts: []Evaluated{firing(a, true, none)}, lastSent: map[string]time.Time{key("hook", "a"): t0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := map[string]time.Time{}
			for k, v := range tt.lastSent {
				last[k] = v
			}
			now := tt.now
			if now.IsZero() {
				now = t0.Add(time.Hour)
			}
			queue, resend := Plan(tt.route, recvs, tt.alerts, last, now)
			if got := summary(queue); got != tt.queue {
				t.Errorf("queue:\n got %s\nwant %s", got, tt.queue)
			}
			if got := summary(resend); got != tt.resend {
				t.Errorf("refresh:\n got %s\nwant %s", got, tt.resend)
			}
			var keys []string
			for k := range last {
				keys = append(keys, k)
			}
			if fmt.Sprint(sorted(keys)) != fmt.Sprint(sorted(tt.after)) {
				t.Errorf("lastSent keys: got %q, want %q", sorted(keys), sorted(tt.after))
			}
			for _, n := range queue {
				if at, ok := last[n.Key()]; ok && at != now {
					t.Errorf("%s: lastSent not set to now", n.Key())
				}
			}
		})
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// The payload is Alertmanager's webhook format, version 4.
func TestMessageShape(t *testing.T) {
	t.Parallel()
	r := rule("a", "warning")
	e1 := firing(r, true, map[string]string{"provider": "x"})
	e2 := resolved(r, map[string]string{"provider": "y"})
	e2.Annotations = map[string]string{"summary": "other"}
	q, _ := Plan(&alerting.Route{Receiver: "hook", GroupBy: []string{"alertname"}},
		[]*alerting.Receiver{{Name: "hook", Kind: alerting.KindWebhook, SendResolved: true}}, []Evaluated{e2, e1}, map[string]time.Time{}, t0.Add(2*time.Hour))
	if len(q) != 1 {
		t.Fatalf("got %d notifications", len(q))
	}
	m := q[0].Message
	if m.Version != "4" || m.Status != "firing" || m.Receiver != "hook" || m.GroupKey != `{}:{alertname="a"}` {
		t.Errorf("header: %+v", m)
	}
	if fmt.Sprint(m.GroupLabels) != "map[alertname:a]" || fmt.Sprint(m.CommonLabels) != "map[alertname:a severity:warning team:ci]" ||
		len(m.CommonAnnotations) != 0 {
		t.Errorf("group %v, common %v %v", m.GroupLabels, m.CommonLabels, m.CommonAnnotations)
	}
	if len(m.Alerts) != 2 || m.Alerts[0].Status != "firing" || m.Alerts[1].Status != "resolved" {
		t.Fatalf("alerts: %+v", m.Alerts)
	}
	f, res := m.Alerts[0], m.Alerts[1]
	if !f.StartsAt.Equal(t0) || !f.EndsAt.IsZero() || !res.EndsAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("times: %v %v %v", f.StartsAt, f.EndsAt, res.EndsAt)
	}
	if f.Fingerprint != alerting.Fingerprint("a", f.Labels) || f.Labels["provider"] != "x" {
		t.Errorf("fingerprint %s of %v", f.Fingerprint, f.Labels)
	}
}

// Key identifies a receiver's notification group, for repeat_interval.
func (n Notification) Key() string { return n.Receiver + "\x00" + n.Message.GroupKey }
