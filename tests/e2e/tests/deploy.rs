//! The deployment material under `deploy/`: every kustomize shape renders with the
//! real `kubectl kustomize`, and the Helm chart with the real `helm template`, and
//! each validates strictly against the Kubernetes schemas (kubernetes-validate and
//! helm, pinned and installed by `scripts/peers`); the
//! configurations they and the image ship load and serve; the pods run as non-root
//! with a read-only root filesystem and no capabilities; and the image's runtime
//! stage provides every shared library the binary needs; clients' Services carry
//! the MCP port only (the admin port, with its control endpoints, is on no Service
//! but the chart's metrics one), a NetworkPolicy selects the gateway's pods in every
//! shape and the chart and admits their admin port only from named peers, and the
//! shipped configurations guard the control endpoints with an `[[admin.tokens]]`.

use anyhow::{bail, Context, Result};
use manifold_e2e::{manifold_bin, repo_root, TempDir};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const SHAPES: [&str; 3] = ["standalone", "sidecar", "replicas"];
/// The oldest Kubernetes the manifests target (native sidecars, `preStop.sleep`).
const KUBERNETES: &str = "1.31";

fn validator() -> Result<String> {
    std::env::var("MANIFOLD_K8S_VALIDATE").context(
        "MANIFOLD_K8S_VALIDATE is not set: run `scripts/test` (scripts/peers installs kubernetes-validate)",
    )
}

fn render(shape: &str) -> Result<String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(repo_root().join("deploy/k8s").join(shape))
        .output()
        .context("kubectl (its kustomize renders deploy/k8s)")?;
    if !out.status.success() {
        bail!(
            "kubectl kustomize {shape}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

fn validate(file: &std::path::Path) -> Result<std::process::Output> {
    Ok(Command::new(validator()?)
        .args(["--strict", "--quiet", "-k", KUBERNETES])
        .arg(file)
        .output()?)
}

/// `file` validates strictly against the Kubernetes schemas.
fn validated(file: &std::path::Path, what: &str) -> Result<()> {
    let out = validate(file)?;
    anyhow::ensure!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// The documents of a rendering as JSON, read by PyYAML from the validator's own
/// environment (pinned with it in tests/deploy/requirements-k8s.txt).
fn documents(yaml: &str) -> Result<Vec<Value>> {
    let python = std::path::Path::new(&validator()?).with_file_name("python");
    let mut child = Command::new(&python)
        .args([
            "-c",
            "import sys, json, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{}", python.display()))?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(yaml.as_bytes())?;
    let out = child.wait_with_output()?;
    anyhow::ensure!(
        out.status.success(),
        "reading YAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn of_kind<'a>(docs: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    docs.iter().filter(move |d| d["kind"] == kind)
}

/// Whether a port entry (of a Service or a NetworkPolicy rule) is the admin port.
fn is_admin_port(p: &Value) -> bool {
    p["name"] == "admin" || p["targetPort"] == "admin" || p["port"] == "admin" || p["port"] == 9090
}

/// The control endpoints are on no Service clients reach: only a Service labelled
/// `app.kubernetes.io/component: metrics` (the chart's, for its ServiceMonitor) may
/// carry the admin port.
fn admin_port_off_client_services(docs: &[Value], what: &str) -> Result<()> {
    for svc in of_kind(docs, "Service") {
        if svc["metadata"]["labels"]["app.kubernetes.io/component"] == "metrics" {
            continue;
        }
        let ports = svc["spec"]["ports"]
            .as_array()
            .context("a Service's ports")?;
        anyhow::ensure!(
            !ports.iter().any(is_admin_port),
            "{what}: the Service {} carries the admin port: {svc}",
            svc["metadata"]["name"]
        );
    }
    Ok(())
}

/// A NetworkPolicy selects the pods that run the gateway (every label of its
/// `podSelector` is on their template), takes over their ingress, and admits the
/// admin port (and, with it, the control endpoints) only from named peers.
fn gateway_network_policy(docs: &[Value], what: &str) -> Result<()> {
    let runs_gateway = |d: &&Value| {
        let spec = &d["spec"]["template"]["spec"];
        ["containers", "initContainers"].iter().any(|k| {
            spec[k]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["name"] == "manifold"))
        })
    };
    let pod = of_kind(docs, "Deployment")
        .find(runs_gateway)
        .with_context(|| format!("{what}: no Deployment runs the gateway"))?;
    let labels = &pod["spec"]["template"]["metadata"]["labels"];
    let policy = of_kind(docs, "NetworkPolicy")
        .find(|p| {
            p["spec"]["podSelector"]["matchLabels"]
                .as_object()
                .is_some_and(|m| !m.is_empty() && m.iter().all(|(k, v)| &labels[k] == v))
        })
        .with_context(|| format!("{what}: no NetworkPolicy selects the gateway's pods"))?;
    anyhow::ensure!(
        policy["spec"]["policyTypes"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "Ingress")),
        "{what}: the gateway's NetworkPolicy leaves ingress alone: {policy}"
    );
    let rules = policy["spec"]["ingress"]
        .as_array()
        .context("the policy's ingress")?;
    let admin_rules: Vec<&Value> = rules
        .iter()
        .filter(|r| {
            r["ports"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(is_admin_port))
        })
        .collect();
    anyhow::ensure!(
        !admin_rules.is_empty(),
        "{what}: no rule admits the scraper to the admin port: {policy}"
    );
    for r in admin_rules {
        anyhow::ensure!(
            r["from"].as_array().is_some_and(|f| !f.is_empty()),
            "{what}: the admin port is open to every peer: {r}"
        );
    }
    Ok(())
}

/// `manifold check` loads the configuration at `cfg` and every upstream comes up,
/// with the Secrets' values the manifests reference.
fn loads(cfg: &std::path::Path, what: &str) -> Result<()> {
    let out = Command::new(manifold_bin()?)
        .args(["check", "--config"])
        .arg(cfg)
        .env(
            "MANIFOLD_API_KEY_HASH",
            "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        )
        .env("MANIFOLD_SESSION_KEY", "0123456789abcdef0123456789abcdef")
        .env(
            "MANIFOLD_ADMIN_TOKEN_HASH",
            "sha256:1111111111111111111111111111111111111111111111111111111111111111",
        )
        .env("MANIFOLD_REDIS_PASSWORD", "0123456789abcdef")
        .env("RUST_LOG", "error")
        .output()?;
    anyhow::ensure!(
        out.status.code() == Some(0),
        "{what}: exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[test]
fn every_shape_renders_and_validates_against_the_kubernetes_schemas() -> Result<()> {
    let dir = TempDir::new("deploy")?;
    for shape in SHAPES {
        let yaml = render(shape)?;
        let file = dir.0.join(format!("{shape}.yaml"));
        std::fs::write(&file, &yaml)?;
        validated(&file, shape)?;
        // Hardening every pod relies on.
        for needle in [
            "runAsNonRoot: true",
            "readOnlyRootFilesystem: true",
            "- ALL",
            "allowPrivilegeEscalation: false",
            "path: /readyz",
            "path: /healthz",
        ] {
            anyhow::ensure!(yaml.contains(needle), "{shape}: no `{needle}`");
        }
        let docs = documents(&yaml)?;
        admin_port_off_client_services(&docs, shape)?;
        gateway_network_policy(&docs, shape)?;
    }
    // The checks can fail: the admin port back on the clients' Service, and a
    // policy that admits every peer to it, are caught.
    let mut docs = documents(&render("standalone")?)?;
    for d in docs.iter_mut() {
        if d["kind"] == "Service" {
            d["spec"]["ports"]
                .as_array_mut()
                .context("ports")?
                .push(serde_json::json!({"name": "admin", "port": 9090, "targetPort": "admin"}));
        }
    }
    anyhow::ensure!(admin_port_off_client_services(&docs, "mutant").is_err());
    for d in docs.iter_mut() {
        if d["kind"] == "NetworkPolicy" {
            for r in d["spec"]["ingress"].as_array_mut().context("ingress")? {
                if let Some(o) = r.as_object_mut() {
                    o.remove("from");
                }
            }
        }
    }
    anyhow::ensure!(gateway_network_policy(&docs, "mutant").is_err());
    // The validator must be able to fail, or the loop above proves nothing.
    let bad = dir.0.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  portz: []\n",
    )?;
    anyhow::ensure!(
        !validate(&bad)?.status.success(),
        "a misspelled field passed"
    );
    Ok(())
}

fn helm(args: &[&str]) -> Result<String> {
    let helm = std::env::var("MANIFOLD_HELM")
        .context("MANIFOLD_HELM is not set: run `scripts/test` (scripts/peers installs helm)")?;
    let out = Command::new(helm)
        .args(args)
        .current_dir(repo_root().join("deploy/helm/manifold"))
        .output()?;
    if !out.status.success() {
        bail!("helm {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The chart (default values, and three replicas with Redis) renders with the real
/// helm, lints, validates strictly, keeps every pod hardened, matches the grace
/// period to `shutdown_grace`, and its configurations load.
#[test]
fn the_helm_chart_renders_lints_and_validates() -> Result<()> {
    let dir = TempDir::new("helm")?;
    helm(&["lint", "--strict", "."])?;
    for (name, values) in [
        ("default", None),
        ("replicas", Some("values-replicas.yaml")),
    ] {
        let mut args = vec!["template", "gw", "."];
        if let Some(v) = values {
            args.extend(["-f", v]);
        }
        let yaml = helm(&args)?;
        let file = dir.0.join(format!("helm-{name}.yaml"));
        std::fs::write(&file, &yaml)?;
        validated(&file, &format!("helm {name}"))?;
        let docs = documents(&yaml)?;
        admin_port_off_client_services(&docs, &format!("helm {name}"))?;
        gateway_network_policy(&docs, &format!("helm {name}"))?;
        for needle in [
            "runAsNonRoot: true",
            "readOnlyRootFilesystem: true",
            "allowPrivilegeEscalation: false",
            "path: /readyz",
            "path: /healthz",
            "terminationGracePeriodSeconds: 20",
        ] {
            anyhow::ensure!(yaml.contains(needle), "helm {name}: no `{needle}`");
        }
        if name == "replicas" {
            for kind in [
                "kind: PodDisruptionBudget",
                "kind: HorizontalPodAutoscaler",
                "name: gw-manifold-redis",
            ] {
                anyhow::ensure!(yaml.contains(kind), "helm replicas: no `{kind}`");
            }
        }
        // The configuration the chart ships loads.
        let toml = yaml
            .split("gateway.toml: |\n")
            .nth(1)
            .context("no gateway.toml in the ConfigMap")?
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with("    "))
            .map(|l| l.strip_prefix("    ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        anyhow::ensure!(
            toml.contains("[[admin.tokens]]"),
            "helm {name}: the control endpoints have no token"
        );
        let cfg = dir.0.join(format!("helm-{name}.toml"));
        std::fs::write(&cfg, toml)?;
        loads(&cfg, &format!("helm {name} gateway.toml"))?;
    }
    // The ServiceMonitor (a Prometheus Operator CRD, which the Kubernetes schemas do not
    // know) scrapes /metrics on the metrics Service's admin port; the clients' Service
    // still carries MCP only.
    let yaml = helm(&[
        "template",
        "gw",
        ".",
        "--set",
        "serviceMonitor.enabled=true",
    ])?;
    let docs = documents(&yaml)?;
    admin_port_off_client_services(&docs, "helm with a ServiceMonitor")?;
    anyhow::ensure!(
        of_kind(&docs, "Service").any(|s| {
            s["metadata"]["labels"]["app.kubernetes.io/component"] == "metrics"
                && s["spec"]["ports"][0]["targetPort"] == "admin"
        }),
        "no metrics Service for the ServiceMonitor"
    );
    let monitor = yaml
        .split("---")
        .find(|d| d.contains("kind: ServiceMonitor"))
        .context("no ServiceMonitor")?;
    for needle in [
        "apiVersion: monitoring.coreos.com/v1",
        "port: admin",
        "path: /metrics",
        "app.kubernetes.io/instance: gw",
        "app.kubernetes.io/component: metrics",
    ] {
        anyhow::ensure!(
            monitor.contains(needle),
            "ServiceMonitor: no `{needle}`:\n{monitor}"
        );
    }
    Ok(())
}

/// The lines nested under line `at` (deeper indentation): a key's value, or the rest
/// of a list item, whatever the order of the keys.
fn block<'a>(lines: &[&'a str], at: usize) -> Vec<&'a str> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    // For a list item (`- name: X`), the rest of the item; a key's list may sit at
    // the key's own column (kubectl writes `policyTypes:\n  - Ingress`).
    let own = indent(lines[at]);
    let item = lines[at].trim_start().starts_with("- ");
    lines[at + 1..]
        .iter()
        .take_while(|l| {
            l.trim().is_empty()
                || indent(l) > own
                || (!item && indent(l) == own && l.trim_start().starts_with("- "))
        })
        .copied()
        .collect()
}

/// The document of `yaml` of `kind` named `name`.
fn document<'a>(yaml: &'a str, kind: &str, name: &str) -> Result<&'a str> {
    yaml.split("\n---")
        .find(|d| {
            d.lines().any(|l| l == format!("kind: {kind}"))
                && d.lines().any(|l| l.trim() == format!("name: {name}"))
        })
        .with_context(|| format!("no {kind} {name}"))
}

/// The shipped Redis of a rendered replicas shape: it requires a password from the
/// Secret `secret`, the gateway's URL carries the same key through
/// `MANIFOLD_REDIS_PASSWORD`, and a NetworkPolicy admits only pods labelled
/// `gateway` (every pair) on 6379, and lets Redis open no connection.
fn redis_locked_down(
    yaml: &str,
    what: &str,
    redis: &str,
    gateway: &[&str],
    secret: &str,
) -> Result<()> {
    let deployment = document(yaml, "Deployment", redis)?;
    let lines: Vec<&str> = deployment.lines().collect();
    for needle in ["--requirepass", "$(REDIS_PASSWORD)"] {
        anyhow::ensure!(
            deployment.contains(needle),
            "{what}: Redis without `{needle}`"
        );
    }
    // Each env var comes from the Secret's redis-password.
    let from_secret = |doc: &str, var: &str| -> Result<()> {
        let lines: Vec<&str> = doc.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.trim().trim_start_matches("- ") == format!("name: {var}"))
            .with_context(|| format!("{what}: no env {var}"))?;
        let env: Vec<&str> = block(&lines, at).iter().map(|l| l.trim()).collect();
        for want in [
            "secretKeyRef:",
            &format!("name: {secret}"),
            "key: redis-password",
        ] {
            anyhow::ensure!(
                env.contains(&want),
                "{what}: {var} without `{want}`: {env:?}"
            );
        }
        Ok(())
    };
    from_secret(deployment, "REDIS_PASSWORD")?;
    anyhow::ensure!(lines.iter().any(|l| l.contains("containerPort: 6379")));
    let gateway_deployment = yaml
        .split("\n---")
        .find(|d| d.contains("kind: Deployment") && d.contains("serve"))
        .context("no gateway Deployment")?;
    from_secret(gateway_deployment, "MANIFOLD_REDIS_PASSWORD")?;
    anyhow::ensure!(
        yaml.contains(r#"redis = "redis://:${MANIFOLD_REDIS_PASSWORD}@"#),
        "{what}: the gateway's URL does not carry the password"
    );

    let policy = document(yaml, "NetworkPolicy", redis)?;
    let lines: Vec<&str> = policy.lines().collect();
    let key = |k: &str| lines.iter().position(|l| l.trim_end() == format!("  {k}:"));
    let target: Vec<&str> = block(&lines, key("podSelector").context("no podSelector")?)
        .iter()
        .map(|l| l.trim().trim_start_matches("- "))
        .collect();
    anyhow::ensure!(
        target.contains(&format!("app.kubernetes.io/name: {redis}").as_str()),
        "{what}: the policy does not select Redis: {target:?}"
    );
    let types: Vec<&str> = block(&lines, key("policyTypes").context("no policyTypes")?)
        .iter()
        .map(|l| l.trim().trim_start_matches("- "))
        .collect();
    anyhow::ensure!(
        types.contains(&"Ingress") && types.contains(&"Egress"),
        "{what}: policyTypes {types:?}"
    );
    anyhow::ensure!(
        lines.iter().any(|l| l.trim_end() == "  egress: []"),
        "{what}: Redis may open connections"
    );
    let ingress: Vec<&str> = block(&lines, key("ingress").context("no ingress")?)
        .iter()
        .map(|l| l.trim().trim_start_matches("- "))
        .collect();
    anyhow::ensure!(
        ingress.iter().filter(|l| l.ends_with("from:")).count() == 1
            && ingress
                .iter()
                .filter(|l| l.contains("podSelector:"))
                .count()
                == 1
            && !ingress
                .iter()
                .any(|l| l.contains("namespaceSelector") || l.contains("ipBlock")),
        "{what}: Redis admits more than one pod selector: {ingress:?}"
    );
    for label in gateway {
        anyhow::ensure!(
            ingress.contains(label),
            "{what}: peers not `{label}`: {ingress:?}"
        );
    }
    let labels = ingress
        .iter()
        .filter(|l| l.starts_with("app.kubernetes.io/"))
        .count();
    anyhow::ensure!(
        labels == gateway.len(),
        "{what}: other peer labels: {ingress:?}"
    );
    anyhow::ensure!(ingress.contains(&"port: 6379"), "{what}: {ingress:?}");
    Ok(())
}

/// The shipped Redis (kustomize replicas, the chart's in-cluster Redis) requires a
/// password from a Secret that the gateway's URL carries, and only the gateway's pods
/// reach it; the checks refuse a render without them.
#[test]
fn the_shipped_redis_needs_a_password_and_admits_only_the_gateway() -> Result<()> {
    let kustomize = render("replicas")?;
    let gateway = ["app.kubernetes.io/name: manifold"];
    redis_locked_down(
        &kustomize,
        "replicas",
        "manifold-redis",
        &gateway,
        "manifold-secrets",
    )?;
    let chart = helm(&["template", "gw", ".", "-f", "values-replicas.yaml"])?;
    let gateway = [
        "app.kubernetes.io/name: manifold",
        "app.kubernetes.io/instance: gw",
    ];
    redis_locked_down(
        &chart,
        "helm replicas",
        "gw-manifold-redis",
        &gateway,
        "gw-manifold-secrets",
    )?;
    // The checks can fail: without the policy, the password or the peer selector.
    let without = helm(&[
        "template",
        "gw",
        ".",
        "-f",
        "values-replicas.yaml",
        "--set",
        "redis.networkPolicy=false",
    ])?;
    anyhow::ensure!(redis_locked_down(
        &without,
        "x",
        "gw-manifold-redis",
        &gateway,
        "gw-manifold-secrets"
    )
    .is_err());
    let open = kustomize.replace("$(REDIS_PASSWORD)", "");
    anyhow::ensure!(redis_locked_down(
        &open,
        "x",
        "manifold-redis",
        &gateway[..1],
        "manifold-secrets"
    )
    .is_err());
    let wide = kustomize.replacen(
        "    - podSelector:\n        matchLabels:\n          app.kubernetes.io/name: manifold\n",
        "    - podSelector: {}\n",
        1,
    );
    anyhow::ensure!(wide != kustomize, "the replacement missed");
    anyhow::ensure!(redis_locked_down(
        &wide,
        "x",
        "manifold-redis",
        &gateway[..1],
        "manifold-secrets"
    )
    .is_err());
    Ok(())
}

#[test]
fn the_shipped_configurations_load_and_serve() -> Result<()> {
    for cfg in [
        "deploy/container-gateway.toml",
        "deploy/k8s/base/gateway.toml",
        "deploy/k8s/sidecar/gateway.toml",
        "deploy/k8s/replicas/gateway.toml",
    ] {
        loads(&repo_root().join(cfg), cfg)?;
    }
    // Where the admin listener faces the network with a Secret at hand, its control
    // endpoints take a token (the sidecar's, without one, are off).
    for cfg in [
        "deploy/container-gateway.toml",
        "deploy/k8s/base/gateway.toml",
        "deploy/k8s/replicas/gateway.toml",
    ] {
        let text = std::fs::read_to_string(repo_root().join(cfg))?;
        anyhow::ensure!(
            text.contains("[[admin.tokens]]") && text.contains("${MANIFOLD_ADMIN_TOKEN_HASH}"),
            "{cfg}: no [[admin.tokens]] from the Secret"
        );
    }
    Ok(())
}

/// The replicas overlay and the chart's replicas values ship placeholder
/// secrets; a gateway given them refuses to start (a key everybody can read
/// would let anyone who reaches Redis sign bus messages), saying what to do.
#[test]
fn the_shipped_placeholder_secrets_are_refused_at_start() -> Result<()> {
    let root = repo_root();
    let shipped = |file: &str, key: &str| -> Result<String> {
        let text = std::fs::read_to_string(root.join(file))?;
        text.lines()
            .find_map(|l| {
                let l = l.trim().trim_start_matches("- ");
                l.strip_prefix(&format!("{key}="))
                    .or_else(|| l.strip_prefix(&format!("{key}: ")))
                    .map(|v| v.trim_matches('"').to_string())
            })
            .ok_or_else(|| anyhow::anyhow!("{file}: no `{key}`"))
    };
    for file in [
        "deploy/k8s/replicas/kustomization.yaml",
        "deploy/helm/manifold/values-replicas.yaml",
    ] {
        let key = shipped(file, "session-key")?;
        let password = shipped(file, "redis-password")?;
        for (what, key, password) in [
            ("session key", key.as_str(), "0123456789abcdef"),
            (
                "Redis password",
                "0123456789abcdef0123456789abcdef",
                password.as_str(),
            ),
        ] {
            let out = Command::new(manifold_bin()?)
                .args(["check", "--config"])
                .arg(root.join("deploy/k8s/replicas/gateway.toml"))
                .env(
                    "MANIFOLD_API_KEY_HASH",
                    "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                )
                .env(
                    "MANIFOLD_ADMIN_TOKEN_HASH",
                    "sha256:1111111111111111111111111111111111111111111111111111111111111111",
                )
                .env("MANIFOLD_SESSION_KEY", key)
                .env("MANIFOLD_REDIS_PASSWORD", password)
                .env("RUST_LOG", "error")
                .output()?;
            let err = String::from_utf8_lossy(&out.stderr);
            anyhow::ensure!(
                out.status.code() != Some(0) && err.contains("placeholder"),
                "{file}: the shipped {what} was accepted (exit {:?}): {err}",
                out.status.code()
            );
        }
    }
    Ok(())
}

/// What the runtime stage (distroless/cc, non-root) must provide: every shared
/// library the binary links, from the C runtime and libgcc only.
#[test]
fn the_image_runs_the_binary_as_non_root_with_only_the_c_runtime() -> Result<()> {
    let dockerfile = std::fs::read_to_string(repo_root().join("deploy/Dockerfile"))?;
    let runtime = dockerfile
        .rsplit("\nFROM ")
        .next()
        .context("no runtime stage")?;
    anyhow::ensure!(
        runtime.starts_with("gcr.io/distroless/cc-debian12:nonroot"),
        "{runtime}"
    );
    anyhow::ensure!(
        runtime.contains("\nUSER 65532:65532"),
        "not the non-root user"
    );
    anyhow::ensure!(runtime.contains(r#"CMD ["serve", "--config", "/etc/manifold/gateway.toml"]"#));
    let out = Command::new("ldd").arg(manifold_bin()?).output()?;
    let libs = String::from_utf8(out.stdout)?;
    // What distroless/cc-debian12 ships: glibc and libgcc_s.
    let provided = [
        "linux-vdso",
        "libc.so",
        "libm.so",
        "libgcc_s.so",
        "libdl.so",
        "libpthread.so",
        "librt.so",
        "ld-linux",
    ];
    for line in libs.lines().map(str::trim).filter(|l| !l.is_empty()) {
        anyhow::ensure!(
            provided.iter().any(|p| line.contains(p)),
            "the binary needs a library distroless/cc lacks: {line}"
        );
    }
    Ok(())
}
