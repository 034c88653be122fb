//! The bench's picture: throughput of every method on every matrix against the copy ceiling
//! measured in the same run, as an SVG beside the CSV.

use plotters::prelude::*;
use std::path::Path;

/// One point: a matrix (by position on the x axis), a method, and its GB/s of minimal traffic.
pub struct Point<'a> {
    pub matrix: &'a str,
    pub method: &'a str,
    pub gbps: f64,
}

/// Draws `points` (matrices in order of first appearance) with the copy bandwidth as a dashed
/// ceiling, to `path`.
pub fn throughput(
    path: &Path,
    title: &str,
    points: &[Point],
    copy_gbps: f64,
) -> wgspmv::Result<()> {
    let mut matrices: Vec<&str> = Vec::new();
    let mut methods: Vec<&str> = Vec::new();
    for p in points {
        if !matrices.contains(&p.matrix) {
            matrices.push(p.matrix);
        }
        if !methods.contains(&p.method) {
            methods.push(p.method);
        }
    }
    let top = points.iter().map(|p| p.gbps).fold(copy_gbps, f64::max) * 1.1;
    let width = (160 + 90 * matrices.len() as u32).max(640);
    let root = SVGBackend::new(path, (width, 480)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| wgspmv::Error::Io {
        path: path.to_owned(),
        source: std::io::Error::other(e.to_string()),
    };
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let n = matrices.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .right_y_label_area_size(0)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top.max(1.0))
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                matrices[i as usize].to_owned()
            } else {
                String::new()
            }
        })
        .y_desc("GB/s of minimal traffic")
        .disable_x_mesh()
        .draw()
        .map_err(|e| draw(&e))?;
    chart
        .draw_series(DashedLineSeries::new(
            [(-0.5, copy_gbps), (n as f64 - 0.5, copy_gbps)],
            6,
            4,
            BLACK.stroke_width(1),
        ))
        .map_err(|e| draw(&e))?
        .label(format!("device copy {copy_gbps:.0} GB/s"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK));
    for (k, method) in methods.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        // Each method's points sit side by side within a matrix's slot.
        let offset = (k as f64 + 0.5) / methods.len() as f64 - 0.5;
        let series = points.iter().filter(|p| p.method == *method).map(|p| {
            let i = matrices.iter().position(|m| *m == p.matrix).unwrap_or(0);
            (i as f64 + 0.8 * offset, p.gbps)
        });
        chart
            .draw_series(series.map(|(x, y)| Circle::new((x, y), 4, color.filled())))
            .map_err(|e| draw(&e))?
            .label(*method)
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| draw(&e))?;
    root.present().map_err(|e| draw(&e))?;
    Ok(())
}
