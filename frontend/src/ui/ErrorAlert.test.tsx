import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ErrorAlert } from "./ErrorAlert";

describe("ErrorAlert", () => {
  it("renders nothing without a message", () => {
    const { container } = render(
      <>
        <ErrorAlert message={null} />
        <ErrorAlert message={undefined} />
        <ErrorAlert message="" />
      </>,
    );
    expect(container).toBeEmptyDOMElement();
  });

  it("shows the message as an alert paragraph with the error class and any extra class", () => {
    render(<ErrorAlert message="Upload failed" className="center" />);
    const alert = screen.getByRole("alert");
    expect(alert.tagName).toBe("P");
    expect(alert).toHaveTextContent("Upload failed");
    expect(alert).toHaveClass("error", "center");
  });

  it("renders a span when inline", () => {
    render(<ErrorAlert message="Not sent" inline />);
    const alert = screen.getByRole("alert");
    expect(alert.tagName).toBe("SPAN");
    expect(alert.className).toBe("error");
  });
});
