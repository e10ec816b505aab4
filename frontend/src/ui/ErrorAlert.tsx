/**
 * An error message announced to assistive technology (role="alert", class "error"); renders nothing when there is
 * no message. `inline` renders a <span> for use inside a row of controls; `className` adds classes (e.g. "center").
 */
export function ErrorAlert({
  message,
  className,
  inline = false,
}: {
  message: string | null | undefined;
  className?: string;
  inline?: boolean;
}) {
  if (!message) return null;
  const Tag = inline ? "span" : "p";
  return (
    <Tag role="alert" className={className ? `error ${className}` : "error"}>
      {message}
    </Tag>
  );
}
