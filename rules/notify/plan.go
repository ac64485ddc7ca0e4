// Package notify turns alert state changes into notifications and delivers
// them to the receivers of a rule file: webhooks (Alertmanager's webhook
// payload, version 4), Alertmanager's v2 API, and commands.
//
// It is pure Go and keeps nothing itself: the caller stores the queue, so a
// notification that cannot be delivered now is retried by the next check.
package notify

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

// Message is Alertmanager's webhook payload, version 4. Commands get it on
// stdin too, and Alertmanager receivers are sent its alerts.
type Message struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"` // firing while any alert fires, else resolved
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []Alert           `json:"alerts"`
}

// Alert is one alert of a Message.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"` // zero while firing
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// Why a notification was queued.
const (
	ReasonChange  = "change"  // an alert of the group fired or resolved
	ReasonRepeat  = "repeat"  // repeat_interval passed while the group fires
	ReasonRefresh = "refresh" // Alertmanager's periodic re-send of firing alerts
)

// Notification is one message for one receiver.
type Notification struct {
	Receiver string
	Reason   string
	Message  Message
}

// Evaluated is an alert after a check, with what notifying it needs.
type Evaluated struct {
	Rule  *alerting.Rule
	Alert alerting.Alert
	// Changed is set when this check moved the alert to firing or to
	// resolved: the changes that notify.
	Changed bool
	// Annotations are the rule's annotation templates expanded for the
	// alert's last value.
	Annotations map[string]string
}

// Labels are the labels an alert is notified with: its own (the rule's
// grouping labels), the rule's labels, severity and alertname. The rule's
// labels win over the sample's, as in Prometheus.
func Labels(r *alerting.Rule, a alerting.Alert) map[string]string {
	l := make(map[string]string, len(a.Labels)+len(r.Labels)+2)
	maps.Copy(l, a.Labels)
	l["severity"] = r.Severity
	maps.Copy(l, r.Labels)
	l["alertname"] = r.Name
	return l
}

// Plan decides what this check notifies. alerts are every rule's alerts
// after the check; lastSent is when each group (by Notification.Key) was
// last queued, and is updated in place: groups that no longer fire are
// removed. Durable notifications (changes and repeats) are returned apart
// from Alertmanager refreshes, which only need to reach Alertmanager at
// some check and are never queued.
func Plan(route *alerting.Route, receivers []*alerting.Receiver, alerts []Evaluated, lastSent map[string]time.Time, now time.Time) (queue, refresh []Notification) {
	if route == nil {
		clear(lastSent)
		return nil, nil
	}
	byName := map[string]*alerting.Receiver{}
	for _, r := range receivers {
		byName[r.Name] = r
	}
	type group struct {
		recv    *alerting.Receiver
		route   *alerting.Route
		labels  map[string]string
		alerts  []Evaluated
		changed bool
		firing  bool
	}
	groups := map[string]*group{}
	var order []string
	for _, e := range alerts {
		if e.Alert.State != alerting.StateFiring && !(e.Alert.State == alerting.StateResolved && e.Changed) {
			continue // pending and old resolutions notify nothing
		}
		labels := Labels(e.Rule, e.Alert)
		for _, leaf := range route.Leaves(labels) {
			recv := byName[leaf.Receiver]
			if recv == nil {
				continue
			}
			resolved := e.Alert.State == alerting.StateResolved
			if resolved && !recv.SendResolved && recv.Kind != alerting.KindAlertmanager {
				continue
			}
			gl := groupLabels(leaf.GroupBy, labels)
			key := recv.Name + "\x00" + groupKey(gl)
			g := groups[key]
			if g == nil {
				g = &group{recv: recv, route: leaf, labels: gl}
				groups[key] = g
				order = append(order, key)
			}
			g.alerts = append(g.alerts, e)
			g.changed = g.changed || e.Changed
			g.firing = g.firing || !resolved
		}
	}
	sort.Strings(order)
	for _, key := range order {
		g := groups[key]
		n := Notification{Receiver: g.recv.Name, Message: message(g.recv.Name, g.labels, g.alerts)}
		_, notified := lastSent[key]
		switch {
		case g.changed, g.firing && !notified:
			// A firing group never notified (the receiver was added while
			// it fired) is news to its receiver too.
			n.Reason = ReasonChange
		case g.recv.Kind == alerting.KindAlertmanager:
			n.Reason = ReasonRefresh
			refresh = append(refresh, n)
			continue
		case g.route.RepeatInterval > 0 && !now.Before(lastSent[key].Add(g.route.RepeatInterval)):
			n.Reason = ReasonRepeat
		default:
			continue
		}
		queue = append(queue, n)
		lastSent[key] = now
	}
	for key := range lastSent {
		if g := groups[key]; g == nil || !g.firing {
			delete(lastSent, key)
		}
	}
	return queue, refresh
}

func groupLabels(by []string, labels map[string]string) map[string]string {
	if slices.Contains(by, "...") {
		return maps.Clone(labels)
	}
	out := map[string]string{}
	for _, l := range by {
		if v, ok := labels[l]; ok {
			out[l] = v
		}
	}
	return out
}

// groupKey is Alertmanager's form of a group's key: the route (always the
// root here) and the group labels.
func groupKey(labels map[string]string) string {
	return "{}:" + labelString(labels)
}

func labelString(labels map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func message(receiver string, gl map[string]string, alerts []Evaluated) Message {
	m := Message{Version: "4", GroupKey: groupKey(gl), Status: "resolved", Receiver: receiver,
		GroupLabels: gl, CommonLabels: map[string]string{}, CommonAnnotations: map[string]string{}, ExternalURL: ""}
	for i, e := range alerts {
		labels := Labels(e.Rule, e.Alert)
		a := Alert{Status: "firing", Labels: labels, Annotations: e.Annotations, StartsAt: e.Alert.FiredAt,
			Fingerprint: alerting.Fingerprint(e.Rule.Name, labels)}
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		if e.Alert.State == alerting.StateResolved {
			a.Status, a.EndsAt = "resolved", e.Alert.ResolvedAt
		} else {
			m.Status = "firing"
		}
		if i == 0 {
			m.CommonLabels, m.CommonAnnotations = maps.Clone(a.Labels), maps.Clone(a.Annotations)
		} else {
			m.CommonLabels, m.CommonAnnotations = common(m.CommonLabels, a.Labels), common(m.CommonAnnotations, a.Annotations)
		}
		m.Alerts = append(m.Alerts, a)
	}
	// Firing first, then by fingerprint, so a message reads the same each time.
	slices.SortStableFunc(m.Alerts, func(a, b Alert) int {
		if a.Status != b.Status {
			return strings.Compare(a.Status, b.Status)
		}
		return strings.Compare(a.Fingerprint, b.Fingerprint)
	})
	return m
}

func common(acc, m map[string]string) map[string]string {
	for k, v := range acc {
		if m[k] != v {
			delete(acc, k)
		}
	}
	return acc
}
