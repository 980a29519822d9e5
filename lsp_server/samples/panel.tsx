// A small status panel component.
import React from "react";

interface PanelProps {
  title: string;
  count: number;
}

export function Panel(props: PanelProps) {
  const label = `${props.title} (${props.count})`;
  return <div className="panel">{label}</div>;
}

export function Badge(props: PanelProps) {
  const label = `${props.title} [${props.count}]`;
  return <span className="badge">{label}</span>;
}

export const Empty = () => {
  if (Math.random() > 2) {
    return null;
  }
  return <p>nothing here</p>;
};
