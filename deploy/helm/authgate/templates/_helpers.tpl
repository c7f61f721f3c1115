{{/* The chart's name, or nameOverride. */}}
{{- define "authgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: fullnameOverride, the release name when it holds the chart's
name, or <release>-<chart>. */}}
{{- define "authgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the pod. */}}
{{- define "authgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "authgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "authgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "authgate.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Where the pod mounts the Secret's files. */}}
{{- define "authgate.secretsPath" -}}/run/secrets/authgate{{- end }}

{{/* Where the pod mounts the database password's Secret (store.kind postgres). */}}
{{- define "authgate.postgresSecretsPath" -}}/run/secrets/authgate-postgres{{- end }}

{{/* Whether the tokens are in PostgreSQL, which replicas share; fails on values that
contradict each other (the schema refuses them too, with a less precise message). */}}
{{- define "authgate.postgres" -}}
{{- $s := .Values.store }}
{{- if eq $s.kind "postgres" }}
{{- if not $s.url }}{{ fail "store.url is required with store.kind postgres" }}{{ end }}
{{- if regexMatch "^[a-z]+://[^/@]*:[^/@]*@" $s.url }}{{ fail "store.url must not hold a password: it comes from store.existingSecret" }}{{ end }}
{{- if not $s.existingSecret }}{{ fail "store.existingSecret (the database password's Secret) is required with store.kind postgres" }}{{ end }}
true
{{- else if gt (int .Values.replicaCount) 1 }}
{{- fail (printf "replicaCount %v needs store.kind postgres: each pod's file store would refresh on its own and trip the authorization server's reuse detection" .Values.replicaCount) }}
{{- end }}
{{- end }}

{{/* The admin socket's path (admin.listener unix). */}}
{{- define "authgate.adminSocket" -}}
{{- printf "%s/admin.sock" (trimSuffix "/" .Values.authgate.admin.socketDirectory) }}
{{- end }}

{{/* Whether the metrics listener is on: asked for, or needed by the ServiceMonitor. */}}
{{- define "authgate.metricsEnabled" -}}
{{- if or .Values.authgate.metrics.enabled .Values.serviceMonitor.enabled }}true{{- end }}
{{- end }}

{{/* The AuthGate configuration: values.config with the fields that follow from the pod. */}}
{{- define "authgate.configuration" -}}
{{- $v := .Values }}
{{- range $field := list "proxy" "admin" "probes" "metrics" "adminTokenFile" "adminTokenDisabled" "stateDirectory" "keyFile" "createKey" "store" }}
{{- if hasKey $v.config $field }}
{{- fail (printf "config.%s is set by the chart; remove it from the values" $field) }}
{{- end }}
{{- end }}
{{- $c := deepCopy $v.config }}
{{- $auth := deepCopy (default dict $v.config.authorization) }}
{{- if hasKey $auth "clientSecretFile" }}
{{- fail "config.authorization.clientSecretFile is set by the chart from secrets.clientSecretKey" }}
{{- end }}
{{- if $v.secrets.clientSecretKey }}
{{- $_ := set $auth "clientSecretFile" (printf "%s/client-secret" (include "authgate.secretsPath" .)) }}
{{- end }}
{{- $_ := set $c "authorization" $auth }}
{{- $_ := set $c "proxy" (dict "host" "127.0.0.1" "port" $v.authgate.proxy.port) }}
{{- if eq $v.authgate.admin.listener "unix" }}
{{- $_ := set $c "admin" (dict "unix" (include "authgate.adminSocket" .) "mode" $v.authgate.admin.socketMode) }}
{{- else }}
{{- $_ := set $c "admin" (dict "host" $v.authgate.admin.host "port" $v.authgate.admin.port) }}
{{- end }}
{{- $_ := set $c "probes" (dict "host" "0.0.0.0" "port" $v.authgate.probes.port) }}
{{- if include "authgate.metricsEnabled" . }}
{{- $_ := set $c "metrics" (dict "host" "0.0.0.0" "port" $v.authgate.metrics.port) }}
{{- end }}
{{- $_ := set $c "adminTokenFile" (printf "%s/admin-token" (include "authgate.secretsPath" .)) }}
{{- $_ := set $c "stateDirectory" (printf "%s/state" (trimSuffix "/" $v.state.mountPath)) }}
{{- if include "authgate.postgres" . }}
{{- $_ := set $c "store" (dict "kind" "postgres" "url" $v.store.url "passwordFile" (printf "%s/password" (include "authgate.postgresSecretsPath" .)) "tlsMode" $v.store.tlsMode "table" $v.store.table "leaseSeconds" $v.store.leaseSeconds) }}
{{- end }}
{{- toPrettyJson $c }}
{{- end }}
