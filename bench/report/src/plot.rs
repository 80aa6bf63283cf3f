//! The report's SVG figures, drawn with `plotters`: lines of a figure against size,
//! and horizontal bars of one figure per case and contender.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::{Measurement, ReportError, XLOG};

/// xlog first (blue), then one colour per peer in order of appearance.
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Contender names in order of appearance, xlog first.
fn contenders(ms: &[&Measurement]) -> Vec<String> {
    let mut names = vec![XLOG.to_owned()];
    for m in ms {
        if !names.contains(&m.contender) {
            names.push(m.contender.clone());
        }
    }
    names
}

fn color(names: &[String], name: &str) -> RGBColor {
    let i = names.iter().position(|n| n == name).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

fn plot_err(path: &Path) -> impl Fn(String) -> ReportError + '_ {
    move |message| ReportError::Plot {
        path: path.to_path_buf(),
        message,
    }
}

/// One line per contender: its figure against log2 of the case's size (the first
/// figure of each contender and size).
pub(crate) fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    ms: &[&Measurement],
) -> Result<(), ReportError> {
    let err = plot_err(path);
    let names = contenders(ms);
    let mut series: Vec<(String, Vec<(f64, f64)>)> =
        names.iter().map(|n| (n.clone(), Vec::new())).collect();
    for m in ms {
        let Some(size) = m.size.filter(|&s| s > 0) else {
            continue;
        };
        let x = (size as f64).log2();
        let points = &mut series
            .iter_mut()
            .find(|(n, _)| *n == m.contender)
            .expect("named above")
            .1;
        if !points.iter().any(|&(px, _)| px == x) {
            points.push((x, m.value));
        }
    }
    series.retain(|(_, p)| !p.is_empty());
    let all = series.iter().flat_map(|(_, p)| p.iter());
    let (x_min, x_max, y_max) = all.fold((f64::MAX, f64::MIN, 0.0f64), |(a, b, c), &(x, y)| {
        (a.min(x), b.max(x), c.max(y))
    });
    if series.is_empty() {
        return Err(err("no sized figures to plot".into()));
    }

    let root = SVGBackend::new(path, (960, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_min - 0.25..x_max + 0.25, 0.0..y_max * 1.15)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels((x_max - x_min) as usize + 1)
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 {
                format!("2^{}", v.round())
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    for (name, points) in &series {
        let c = color(&names, name);
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(|e| err(e.to_string()))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(|e| err(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// One horizontal bar per case, size and contender (the first figure of each),
/// top to bottom in the order of the file, labelled with its value.
pub(crate) fn bars(
    path: &Path,
    title: &str,
    x_desc: &str,
    ms: &[&Measurement],
) -> Result<(), ReportError> {
    let err = plot_err(path);
    let names = contenders(ms);
    let mut rows: Vec<(String, &Measurement)> = Vec::new();
    for m in ms {
        let label = match m.size {
            Some(s) => format!("{} {} · {}", m.case, s, m.contender),
            None => format!("{} · {}", m.case, m.contender),
        };
        if !rows.iter().any(|(l, _)| *l == label) {
            rows.push((label, m));
        }
    }
    if rows.is_empty() {
        return Err(err("no figures to plot".into()));
    }
    let n = rows.len();
    let x_max = rows.iter().map(|(_, m)| m.value).fold(0.0f64, f64::max) * 1.2;
    let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
    // Row i is drawn at key n-1-i, so the file's first row is at the top (keys
    // 0..=n-1: a discrete range includes its end).
    let key = |i: usize| n - 1 - i;

    let height = 110 + 30 * n as u32;
    let root = SVGBackend::new(path, (960, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(44)
        .y_label_area_size(320)
        .build_cartesian_2d(0.0..x_max, (0..n - 1).into_segmented())
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(k) if *k < n => labels[n - 1 - k].to_owned(),
            _ => String::new(),
        })
        .draw()
        .map_err(|e| err(e.to_string()))?;
    // One rectangle per row, drawn in the order of the rows: plotters' `Histogram`
    // would collect them in a hash map and emit them in a different order each run.
    let y_spec = chart.as_coord_spec().y_spec().clone();
    let bar = |i: usize, m: &Measurement| {
        let (top, bottom) = (y_spec.from_index(key(i)), y_spec.from_index(key(i) + 1));
        let mut rect = Rectangle::new(
            [
                (m.value, top.expect("a key of the range")),
                (0.0, bottom.expect("keys end at n")),
            ],
            color(&names, &m.contender).filled(),
        );
        rect.set_margin(5, 5, 0, 0);
        rect
    };
    chart
        .draw_series(rows.iter().enumerate().map(|(i, (_, m))| bar(i, m)))
        .map_err(|e| err(e.to_string()))?;
    let style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(rows.iter().enumerate().map(|(i, (_, m))| {
            Text::new(
                format!("{:.0} {}", m.value, m.unit),
                (m.value + x_max * 0.01, SegmentValue::CenterOf(key(i))),
                style.clone(),
            )
        }))
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}
