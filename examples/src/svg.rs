//! The demo's optional chart: cache latency over time in both phases, as a
//! small hand-written SVG (no dependency).

use std::fmt::Write;
use std::time::Duration;

use crate::simulation::{PhaseResult, Scenario};

const PANEL_W: f64 = 420.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 40.0;
/// Room between the panels for the right panel's own latency labels.
const GAP: f64 = LEFT;
/// The bottom of the logarithmic latency axis: 0.1 ms.
const Y_LOW: f64 = 1e-4;

/// An SVG document with one panel per phase: each cache call is a dot at
/// (arrival time, latency), on one shared, logarithmic latency axis (from
/// 0.1 ms to the slowest call, labelled at each power of ten), so that the
/// bulkhead phase's milliseconds and the other phase's seconds are both
/// readable. The database spike is shaded and the database's wait budget
/// drawn as a dashed line.
pub fn latency_chart(without: &PhaseResult, with: &PhaseResult, s: &Scenario) -> String {
    let secs = |d: Duration| d.as_secs_f64();
    let y_max = [without, with]
        .iter()
        .flat_map(|p| p.cache.timeline.iter().map(|&(_, l)| secs(l)))
        .fold(secs(s.database_budget) * 2.0, f64::max)
        .max(Y_LOW * 10.0);
    let (log_low, log_span) = (Y_LOW.log10(), y_max.log10() - Y_LOW.log10());
    let x_max = secs(s.duration).max(1e-3);
    let width = LEFT + 2.0 * PANEL_W + GAP + 20.0;
    let height = TOP + PANEL_H + 50.0;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="20" font-size="14">cache latency over time, log scale (each dot is one call; shaded: database spike; dashed: database wait budget)</text>"#
    );
    for (i, (title, phase)) in [
        ("no bulkheads", without),
        ("one compartment per dependency", with),
    ]
    .into_iter()
    .enumerate()
    {
        let x0 = LEFT + i as f64 * (PANEL_W + GAP);
        let px = |t: f64| x0 + t / x_max * PANEL_W;
        let py = |l: f64| TOP + PANEL_H - (l.max(Y_LOW).log10() - log_low) / log_span * PANEL_H;
        // The spike window.
        let (a, b) = (px(x_max * s.spike.0), px(x_max * s.spike.1));
        let _ = writeln!(
            svg,
            r##"<rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{PANEL_H}" fill="#fde2e2"/>"##,
            b - a
        );
        // Axes and labels.
        let _ = writeln!(
            svg,
            r#"<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{title}</text>"#,
            x0 + PANEL_W / 2.0,
            TOP - 6.0
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">arrival time (0 to {x_max:.1} s)</text>"#,
            x0 + PANEL_W / 2.0,
            TOP + PANEL_H + 20.0
        );
        let mut decade = Y_LOW;
        while decade <= y_max * 1.000_001 {
            let y = py(decade);
            let label = if decade < 1e-3 {
                format!("{:.1} ms", decade * 1e3)
            } else {
                format!("{:.0} ms", decade * 1e3)
            };
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"#,
                x0 - 4.0,
                y + 4.0
            );
            let _ = writeln!(
                svg,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/>"##,
                x0 + PANEL_W
            );
            decade *= 10.0;
        }
        // The database's wait budget.
        let budget = py(secs(s.database_budget));
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" y1="{budget:.1}" x2="{:.1}" y2="{budget:.1}" stroke="#888" stroke-dasharray="4 3"/>"##,
            x0 + PANEL_W
        );
        // One dot per cache call.
        for &(arrived, latency) in &phase.cache.timeline {
            let _ = writeln!(
                svg,
                r##"<circle cx="{:.1}" cy="{:.1}" r="1.5" fill="#1f77b4" fill-opacity="0.6"/>"##,
                px(secs(arrived)),
                py(secs(latency))
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}
